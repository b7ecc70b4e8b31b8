package kubeconfig

import (
	"strings"
	"testing"
	"unicode"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/plinth-dev/plinth/internal/apifuzz"
)

// clusterKind is the kind whose writes carry a kubeconfig.
var clusterKind = schema.GroupKind{Group: "platform.plinth.dev", Kind: "Cluster"}

// FuzzKubeconfig feeds arbitrary kubeconfigs to Check and RESTConfig: no panic; every error
// under spec.kubeconfig with a message; Check and RESTConfig agree on what is acceptable; and
// no error quotes a token or a key of the input.
func FuzzKubeconfig(f *testing.F) {
	for _, seed := range seedConfigs() {
		data, err := clientcmd.Write(*seed)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`{"apiVersion":"v1","kind":"Config","current-context":"x","contexts":[{"name":"x","context":{"cluster":"c","user":"u"}}],"clusters":[{"name":"c","cluster":{"server":"https://h"}}],"users":[{"name":"u","user":{"token":"T0k3nT0k3nT0k3n"}}]}`))
	f.Add([]byte("current-context: x\ncontexts: [{name: x}]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := field.NewPath("spec", "kubeconfig")
		errs := Check(data, path)
		for _, p := range apifuzz.Problems(clusterKind, nil, errs) {
			t.Error(p)
		}
		for _, e := range errs {
			if e.Field != path.String() {
				t.Errorf("an error at %s, not at %s: %v", e.Field, path, e)
			}
		}
		if cfg, err := clientcmd.Load(data); err == nil {
			for _, secret := range secrets(cfg) {
				for _, e := range errs {
					if strings.Contains(e.Error(), secret) {
						t.Errorf("an error quotes a credential of the kubeconfig: %v", e)
					}
				}
			}
		}
		rc, err := RESTConfig(data)
		switch {
		case len(errs) == 0 && err != nil:
			t.Errorf("Check accepts the kubeconfig, RESTConfig refuses it: %v", err)
		case len(errs) > 0 && err == nil:
			t.Errorf("Check refuses the kubeconfig (%v), RESTConfig accepts it", errs)
		case err == nil && !strings.HasPrefix(rc.Host, "https://"):
			t.Errorf("an accepted kubeconfig gives host %q", rc.Host)
		}
	})
}

// seedConfigs are kubeconfigs Check accepts and each way it refuses one.
func seedConfigs() []*clientcmdapi.Config {
	withExec, withFile, insecure := valid(), valid(), valid()
	withExec.AuthInfos["u"].Exec = &clientcmdapi.ExecConfig{Command: "sh"}
	withFile.AuthInfos["u"] = &clientcmdapi.AuthInfo{TokenFile: "/etc/token"}
	insecure.Clusters["c"].InsecureSkipTLSVerify = true
	withCert := valid()
	withCert.AuthInfos["u"] = &clientcmdapi.AuthInfo{ClientCertificateData: []byte("cert"), ClientKeyData: []byte("key")}
	return []*clientcmdapi.Config{valid(), withExec, withFile, insecure, withCert}
}

// secrets are the credentials of every user of cfg that are distinctive enough to look for in
// an error: names of contexts, clusters and users may be quoted, so a token that is one of
// them, or lies within one, or is too short or too plain to tell from ordinary words, is
// skipped.
func secrets(cfg *clientcmdapi.Config) []string {
	var names []string
	for n, c := range cfg.Contexts {
		names = append(names, n, c.Cluster, c.AuthInfo)
	}
	for n := range cfg.Clusters {
		names = append(names, n)
	}
	for n := range cfg.AuthInfos {
		names = append(names, n)
	}
	all := strings.Join(names, "\x00")
	var out []string
	for _, u := range cfg.AuthInfos {
		for _, s := range []string{u.Token, string(u.ClientKeyData), string(u.ClientCertificateData), u.Password} {
			if len(s) >= 8 && strings.IndexFunc(s, unicode.IsDigit) >= 0 && !strings.Contains(all, s) {
				out = append(out, s)
			}
		}
	}
	return out
}
