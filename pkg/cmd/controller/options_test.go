package controller

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// kubeconfigFor writes a kubeconfig that points at server.
func kubeconfigFor(t *testing.T, server string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	doc := `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "` + server + `"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestInvalidFlagsAreAllReportedBeforeAnythingIsContacted(t *testing.T) {
	var requests atomic.Int32
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		requests.Add(1)
		http.Error(w, "no", http.StatusInternalServerError)
	}))
	defer server.Close()
	cmd := NewCommand(context.Background())
	cmd.SetArgs([]string{
		"--kubeconfig", kubeconfigFor(t, server.URL), "--bind-address", "nonsense", "--workers", "0", "--compute-workers", "0", "--kube-api-qps", "0",
		"--provisioners-config", "/nonexistent/provisioners.yaml", "--vm-poll-interval", "0s", "--compute-resync-period", "0s",
		"--compute-quota-resync-period", "0s", "--informer-resync", "0s",
		"--registry-volume-dir", "registries", "--registry-data-roots", "/srv/registries,data", "--registry-probe-interval", "0s",
		"--gitops-namespace", "Not_A_Namespace", "--flux-manifests-dir", "/nonexistent/flux",
		"--leader-elect-lease-duration", "5s", "--leader-elect-renew-deadline", "10s",
	})
	cmd.SetOut(&strings.Builder{})
	cmd.SetErr(&strings.Builder{})
	err := cmd.Execute()
	if err == nil {
		t.Fatal("invalid flags were accepted")
	}
	for _, want := range []string{"--bind-address", "--workers", "--compute-workers", "--kube-api-qps", "--provisioners-config", "--vm-poll-interval", "--compute-resync-period", "--compute-quota-resync-period", "--informer-resync", "--registry-volume-dir", "--registry-data-roots: \"data\"", "--registry-probe-interval", "--gitops-namespace", "--flux-manifests-dir: reading the version of source-controller's CRDs", "leaderElection.leaseDuration"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not name %s: %v", want, err)
		}
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("the API server was contacted %d times before validation passed", n)
	}
}

func TestDefaultsAreValid(t *testing.T) {
	o := NewOptions()
	if err := o.Complete(); err != nil {
		t.Fatal(err)
	}
	if err := o.Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
}

// Registries may store in the volume directory and nowhere else unless --registry-data-roots
// says so.
func TestRegistryDataRootsDefaultToTheVolumeDir(t *testing.T) {
	o := NewOptions()
	o.RegistryVolumeDir = "/srv/plinth/registries"
	if err := o.Complete(); err != nil {
		t.Fatal(err)
	}
	if len(o.RegistryDataRoots) != 1 || o.RegistryDataRoots[0] != "/srv/plinth/registries" {
		t.Errorf("data roots: %v", o.RegistryDataRoots)
	}
	o = NewOptions()
	o.RegistryDataRoots = []string{"/data"}
	if err := o.Complete(); err != nil {
		t.Fatal(err)
	}
	if len(o.RegistryDataRoots) != 1 || o.RegistryDataRoots[0] != "/data" {
		t.Errorf("data roots given: %v", o.RegistryDataRoots)
	}
}

// A provisioners file whose template does not parse is a bad flag like any other: reported by
// Validate, before anything starts.
func TestBrokenProvisionersFileIsABadFlag(t *testing.T) {
	for name, tc := range map[string]struct{ file, want string }{
		"a template that does not parse": {"- uri: template://x/amqp\n  type: amqp\n  outputs: 'host: {{ .State.name '\n", "[0].outputs"},
		// Plinth's earlier format is a map, not score-k8s's list.
		"the earlier format": {"provisioners:\n- type: amqp\n", "not a YAML list of provisioners"},
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "provisioners.yaml")
			if err := os.WriteFile(path, []byte(tc.file), 0o600); err != nil {
				t.Fatal(err)
			}
			o := NewOptions()
			o.ProvisionersConfig = path
			if err := o.Complete(); err != nil {
				t.Fatal(err)
			}
			err := o.Validate()
			if err == nil || !strings.Contains(err.Error(), "--provisioners-config") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate: %v", err)
			}
		})
	}
}
