package integration

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/plinth-dev/plinth/internal/localplatform"
	platform "github.com/plinth-dev/plinth/pkg/apis/platform/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
	clientset "github.com/plinth-dev/plinth/pkg/generated/clientset/versioned"
	"github.com/plinth-dev/plinth/pkg/oci/registryauth"
	"github.com/plinth-dev/plinth/test/integration/framework"
)

// credentialCanary is a value no response, log line, event or audit record may carry. what
// names it in failures; the value itself is never printed.
type credentialCanary struct{ what, value string }

// ledgerWorkload is alice's workload whose provisioners generate passwords: postgres (a Go
// provisioner, the password in a Secret) and mongodb (a score-k8s template, the password in its
// state Secret and in an output Secret).
const ledgerWorkload = `apiVersion: score.dev/v1b1
kind: Workload
metadata: {name: ledger}
spec:
  containers:
    main:
      image: ghcr.io/example/ledger:1.0
      variables:
        PGPASSWORD: ${resources.db.password}
        MONGO_PASSWORD: ${resources.store.password}
  resources:
    db: {type: postgres}
    store: {type: mongodb}
`

// registerCredentials gives the platform credentials to leak and returns them: dana registers
// Cluster edge with a kubeconfig holding a fresh bearer token (the local Cluster's kubeconfig
// holds a client key), and alice applies ledgerWorkload, whose generated passwords and
// provisioner state it waits for.
func registerCredentials(ctx context.Context, t *testing.T, p *localplatform.Platform) []credentialCanary {
	t.Helper()
	var canaries []credentialCanary
	add := func(what string, value []byte) {
		if len(value) < 8 {
			t.Fatalf("%s is %d bytes: too short to search for", what, len(value))
		}
		canaries = append(canaries, credentialCanary{what, string(value)},
			credentialCanary{what + " (base64)", base64.StdEncoding.EncodeToString(value)})
	}

	token := make([]byte, 24)
	if _, err := rand.Read(token); err != nil {
		t.Fatal(err)
	}
	caPEM, err := os.ReadFile(filepath.Join(p.PKIDir(), "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig, err := clientcmd.Write(clientcmdapi.Config{
		Clusters:       map[string]*clientcmdapi.Cluster{"edge": {Server: p.KubeURL(), CertificateAuthorityData: caPEM}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{"edge": {Token: "canary" + hex.EncodeToString(token)}},
		Contexts:       map[string]*clientcmdapi.Context{"edge": {Cluster: "edge", AuthInfo: "edge"}},
		CurrentContext: "edge",
	})
	if err != nil {
		t.Fatal(err)
	}
	add("Cluster edge's bearer token", []byte("canary"+hex.EncodeToString(token)))
	danaCfg, err := p.ConfigFor("dana")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := clientset.NewForConfigOrDie(danaCfg).PlatformV1alpha1().Clusters().Create(ctx, &platform.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: "edge"}, Spec: platform.ClusterSpec{Kubeconfig: string(kubeconfig)}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("dana registers Cluster edge: %v", err)
	}
	// The local Cluster's kubeconfig: its client key, as a kubeconfig embeds it (base64 of the
	// PEM) and as the PEM itself.
	keyPEM, err := os.ReadFile(filepath.Join(p.PKIDir(), "plinth-target.key"))
	if err != nil {
		t.Fatal(err)
	}
	canaries = append(canaries,
		credentialCanary{"Cluster local's client key (base64)", base64.StdEncoding.EncodeToString(keyPEM)[:48]},
		credentialCanary{"Cluster local's client key (PEM)", string(keyPEM[40:90])})

	if out, err := framework.KubectlStdin(p.Kubeconfig("alice"), ledgerWorkload, "apply", "-n", "team-a", "-f", "-"); err != nil {
		t.Fatalf("alice applies ledger: %v\n%s", err, out)
	}
	adminCfg, err := p.ConfigFor("admin")
	if err != nil {
		t.Fatal(err)
	}
	kube := kubernetes.NewForConfigOrDie(adminCfg)
	score := clientset.NewForConfigOrDie(adminCfg).ScoreV1b1()
	// Every secret output and credential of ledger's bindings, and the state of the template's.
	var found []credentialCanary
	waitForCondition(t, 2*time.Minute, func() (bool, string) {
		found = nil
		for _, binding := range []string{"ledger-db", "ledger-store"} {
			b, err := score.ResourceBindings("team-a").Get(ctx, binding, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			refs := map[string]v1b1.SecretKeyReference{}
			if o := b.Status.Outputs; o != nil {
				for output, ref := range o.Secrets {
					refs[output] = ref
				}
				if o.Credentials != nil && o.Credentials.SecretRef != nil {
					refs["credentials"] = *o.Credentials.SecretRef
				}
			}
			if len(refs) == 0 {
				return false, fmt.Sprintf("binding %s has no secret outputs yet: %+v", binding, b.Status)
			}
			for output, ref := range refs {
				s, err := kube.CoreV1().Secrets("team-a").Get(ctx, ref.Name, metav1.GetOptions{})
				if err != nil {
					return false, err.Error()
				}
				for key, value := range s.Data {
					// A key the binding names is a secret output; of a whole Secret (a
					// credentials reference), the passwords are what is secret: host and
					// user name are published as plain outputs too.
					if ref.Key == key || (ref.Key == "" && strings.Contains(strings.ToLower(key), "password")) {
						found = append(found, credentialCanary{fmt.Sprintf("%s's secret output %s (%s/%s)", binding, output, ref.Name, key), string(value)})
					}
				}
			}
		}
		state, err := kube.CoreV1().Secrets("team-a").Get(ctx, "ledger-store.state", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		var values map[string]any
		if err := json.Unmarshal(state.Data["state"], &values); err != nil {
			return false, fmt.Sprintf("state of ledger-store: %v", err)
		}
		for key, value := range values {
			if s, ok := value.(string); ok && strings.Contains(strings.ToLower(key), "password") {
				found = append(found, credentialCanary{"ledger-store's provisioner state " + key, s})
			}
		}
		return len(found) >= 3, fmt.Sprintf("%d secret values", len(found))
	})
	sort.Slice(found, func(i, j int) bool { return found[i].what < found[j].what })
	for _, c := range found {
		add(c.what, []byte(c.value))
	}
	// Cluster local's registry write token, which plinth-controller creates in the registry's
	// data directory when it first starts the registry: as the file holds it, and as the
	// basic-auth header carries it (base64 of user:token).
	var registryCred registryauth.Credential
	waitForCondition(t, time.Minute, func() (bool, string) {
		c, err := p.RegistryCredential()
		registryCred = c
		return err == nil, fmt.Sprintf("Cluster local's registry credential: %v", err)
	})
	add("Cluster local's registry token", []byte(registryCred.Password))
	add("Cluster local's registry credential (user:token)", []byte(registryCred.Username+":"+registryCred.Password))
	return canaries
}

// checkNoCredentialLeaks searches for the canaries in: every response the matrix's requests
// got; every Plinth object as every caller that may list it, as JSON and as the table kubectl
// prints, and every subresource of it the caller may get; every Event of every namespace; every
// component log; and any audit log the platform writes.
func checkNoCredentialLeaks(ctx context.Context, t *testing.T, p *localplatform.Platform, canaries []credentialCanary, subjects []*authzSubject, checks []*authzCheck) {
	scanned, places := 0, 0
	scan := func(where string, data []byte) {
		scanned += len(data)
		places++
		for _, c := range canaries {
			if bytes.Contains(data, []byte(c.value)) {
				t.Errorf("%s carries %s", where, c.what)
			}
		}
	}
	for _, c := range checks {
		scan("the response to "+c.String(), c.outcome.body)
	}

	// What each caller may read, as the matrix found it.
	type access struct {
		subject                      *authzSubject
		group, resource, verb, scope string
	}
	allowed := map[access]bool{}
	subresources := map[string][]string{} // group/resource → subresources
	for _, c := range checks {
		allowed[access{c.subject, c.res.gv.Group, c.res.String(), c.verb, c.ns}] = c.outcome.allowed()
		if c.res.subresource != "" && c.subject == subjects[0] && c.verb == "get" && c.ns != "team-b" {
			subresources[c.res.gv.Group+"/"+c.res.resource] = append(subresources[c.res.gv.Group+"/"+c.res.resource], c.res.subresource)
		}
	}
	const table = "application/json;as=Table;v=v1;g=meta.k8s.io"
	for _, c := range checks {
		if c.verb != "list" || c.res.subresource != "" || !c.outcome.allowed() {
			continue
		}
		s, base := c.subject, "/apis/"+c.res.gv.String()
		if c.ns != "" {
			base += "/namespaces/" + c.ns
		}
		base += "/" + c.res.resource
		code, body := request(t, s, base, nil)
		if code != http.StatusOK {
			t.Errorf("%s lists %s: %d %.300s", s.name, base, code, body)
			continue
		}
		scan(s.name+"'s list of "+base, []byte(body))
		_, tableBody := request(t, s, base, http.Header{"Accept": {table}})
		scan(s.name+"'s table of "+base, []byte(tableBody))
		if c.ns == "" && c.res.namespaced {
			continue // the namespaces' own lists fetch each object's subresources
		}
		var list struct {
			Items []struct {
				Metadata metav1.ObjectMeta `json:"metadata"`
			} `json:"items"`
		}
		if err := json.Unmarshal([]byte(body), &list); err != nil {
			t.Errorf("%s: %v", base, err)
			continue
		}
		for _, item := range list.Items {
			for _, sub := range subresources[c.res.gv.Group+"/"+c.res.resource] {
				if !allowed[access{s, c.res.gv.Group, c.res.resource + "/" + sub, "get", c.ns}] {
					continue
				}
				path := base + "/" + item.Metadata.Name + "/" + sub
				code, body := request(t, s, path, nil)
				if code != http.StatusOK && code != http.StatusNotFound {
					t.Errorf("%s gets %s: %d %.300s", s.name, path, code, body)
				}
				scan(s.name+"'s "+path, []byte(body))
			}
		}
	}

	adminCfg, err := p.ConfigFor("admin")
	if err != nil {
		t.Fatal(err)
	}
	kube := kubernetes.NewForConfigOrDie(adminCfg)
	for _, path := range []string{"/api/v1/events", "/apis/events.k8s.io/v1/events"} {
		data, err := kube.CoreV1().RESTClient().Get().AbsPath(path).DoRaw(ctx)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		scan("Events "+path, data)
	}

	// Every component's log, plinth-apiserver's audit log among them, and any other audit log
	// in the platform directory.
	logs, audit := 0, 0
	root := filepath.Dir(p.LogDir())
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		inLogs := strings.HasPrefix(path, p.LogDir()+string(filepath.Separator))
		if !inLogs && !strings.Contains(strings.ToLower(d.Name()), "audit") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		logs++
		if strings.Contains(strings.ToLower(d.Name()), "audit") {
			audit++
		}
		rel, _ := filepath.Rel(root, path)
		scan(rel, data)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if logs == 0 {
		t.Fatal("no logs to search")
	}
	// plinth-apiserver's audit log must be among them, with the matrix's requests in it.
	if info, err := os.Stat(p.AuditLogPath()); err != nil || info.Size() == 0 {
		t.Errorf("plinth-apiserver's audit log %s: %v (empty or missing)", p.AuditLogPath(), err)
	}
	t.Logf("searched %d responses, lists, tables, event lists and %d log files (%d of them audit files: the log and its policy; %d MiB in all) for %d credential forms",
		places-logs, logs, audit, scanned>>20, len(canaries))
}
