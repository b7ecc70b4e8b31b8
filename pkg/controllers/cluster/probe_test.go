package cluster

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	platform "github.com/plinth-dev/plinth/pkg/apis/platform/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/governance/vmprovider/kubevirt"
)

// fakeCluster answers like a kube-apiserver with a KubeVirt installation, or, where ready or
// kubevirt say so, without.
func fakeCluster(t *testing.T, ready bool, kubevirt string) *rest.Config {
	t.Helper()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/version":
			_, _ = w.Write([]byte(`{"major":"1","minor":"37","gitVersion":"v1.37.1"}`))
		case "/readyz":
			if !ready {
				http.Error(w, "etcd not ready", http.StatusInternalServerError)
				return
			}
			_, _ = w.Write([]byte("ok"))
		case "/apis/kubevirt.io/v1/kubevirts":
			if kubevirt == "" {
				http.NotFound(w, r)
				return
			}
			_, _ = w.Write([]byte(kubevirt))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return &rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
}

const deployedKubeVirt = `{"apiVersion":"kubevirt.io/v1","kind":"KubeVirtList","metadata":{},"items":[{"apiVersion":"kubevirt.io/v1","kind":"KubeVirt",
"metadata":{"name":"kubevirt","namespace":"kubevirt"},
"spec":{"configuration":{"developerConfiguration":{"featureGates":["Snapshot","LiveMigration","Snapshot"]}}},
"status":{"phase":"Deployed","observedKubeVirtVersion":"v1.9.0"}}]}`

func TestProbeHealthyClusterWithKubeVirt(t *testing.T) {
	f := Probe(5*time.Second, kubevirt.DetectFromConfig)(context.Background(), fakeCluster(t, true, deployedKubeVirt))
	if f.Phase != platform.ClusterPhaseHealthy || f.KubernetesVersion != "v1.37.1" || f.KubevirtVersion != "v1.9.0" {
		t.Fatalf("finding: %+v", f)
	}
	if strings.Join(f.EnabledFeatures, ",") != "LiveMigration,Snapshot" {
		t.Errorf("features %v, want sorted and unique", f.EnabledFeatures)
	}
	if f.KubeVirt.Status != metav1.ConditionTrue || f.Reachable.Status != metav1.ConditionTrue {
		t.Errorf("conditions: %+v %+v", f.Reachable, f.KubeVirt)
	}
}

func TestProbeWithoutKubeVirt(t *testing.T) {
	f := Probe(5*time.Second, kubevirt.DetectFromConfig)(context.Background(), fakeCluster(t, true, ""))
	if f.Phase != platform.ClusterPhaseHealthy || f.KubeVirt.Status != metav1.ConditionFalse || f.KubeVirt.Reason != "NotInstalled" {
		t.Fatalf("finding: %+v", f)
	}
}

func TestProbeNotReadyIsUnhealthy(t *testing.T) {
	f := Probe(5*time.Second, kubevirt.DetectFromConfig)(context.Background(), fakeCluster(t, false, deployedKubeVirt))
	if f.Phase != platform.ClusterPhaseUnhealthy || f.Reachable.Reason != "NotReady" {
		t.Fatalf("finding: %+v", f)
	}
}

func TestProbeRejectedCredentialsAreUnhealthy(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Unauthorized","code":401}`))
	}))
	defer srv.Close()
	f := Probe(5*time.Second, kubevirt.DetectFromConfig)(context.Background(), &rest.Config{Host: srv.URL, BearerToken: "wrong", TLSClientConfig: rest.TLSClientConfig{Insecure: true}})
	if f.Phase != platform.ClusterPhaseUnhealthy || f.Reachable.Reason != "CredentialsRejected" {
		t.Fatalf("finding: %+v", f)
	}
	if strings.Contains(f.Reachable.Message, "wrong") {
		t.Error("the message repeats the token")
	}
}

func TestProbeClosedPortIsUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	f := Probe(2*time.Second, kubevirt.DetectFromConfig)(context.Background(), &rest.Config{Host: "https://" + addr, TLSClientConfig: rest.TLSClientConfig{Insecure: true}})
	if f.Phase != platform.ClusterPhaseUnreachable || f.Reachable.Reason != "Unreachable" {
		t.Fatalf("finding: %+v", f)
	}
}
