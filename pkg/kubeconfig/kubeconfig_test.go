package kubeconfig

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

const secretToken = "s3cr3t-t0ken-that-must-never-leak"

func valid() *clientcmdapi.Config {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: "https://10.0.0.1:6443", CertificateAuthorityData: []byte("ca")}
	cfg.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: secretToken}
	cfg.Contexts["ctx"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	cfg.CurrentContext = "ctx"
	return cfg
}

func encode(t *testing.T, cfg *clientcmdapi.Config) []byte {
	t.Helper()
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestCheckAcceptsSelfContainedKubeconfigs(t *testing.T) {
	withCert := valid()
	withCert.AuthInfos["u"] = &clientcmdapi.AuthInfo{ClientCertificateData: []byte("cert"), ClientKeyData: []byte("key")}
	onlyContext := valid()
	onlyContext.CurrentContext = "" // a single context is the current one
	for name, cfg := range map[string]*clientcmdapi.Config{"token": valid(), "client certificate": withCert, "single context": onlyContext} {
		if errs := Check(encode(t, cfg), field.NewPath("spec", "kubeconfig")); len(errs) > 0 {
			t.Errorf("%s: %v", name, errs)
		}
	}
	cfg, err := RESTConfig(encode(t, valid()))
	if err != nil || cfg.Host != "https://10.0.0.1:6443" || cfg.BearerToken != secretToken {
		t.Errorf("RESTConfig = %+v, %v", cfg, err)
	}
}

func TestCheckRefusesUnsafeOrBrokenKubeconfigs(t *testing.T) {
	cases := map[string]struct {
		mutate func(*clientcmdapi.Config)
		raw    string
		want   string
	}{
		"blank":           {raw: " ", want: "current-context"},
		"not yaml":        {raw: "{{{" + secretToken, want: "is not a kubeconfig"},
		"no context":      {mutate: func(c *clientcmdapi.Config) { c.CurrentContext = "missing" }, want: "current-context"},
		"missing cluster": {mutate: func(c *clientcmdapi.Config) { c.Contexts["ctx"].Cluster = "nope" }, want: `names cluster "nope"`},
		"missing user":    {mutate: func(c *clientcmdapi.Config) { c.Contexts["ctx"].AuthInfo = "nope" }, want: `names user "nope"`},
		"http server":     {mutate: func(c *clientcmdapi.Config) { c.Clusters["c"].Server = "http://10.0.0.1" }, want: "https://"},
		"userinfo in URL": {mutate: func(c *clientcmdapi.Config) { c.Clusters["c"].Server = "https://admin:" + secretToken + "@10.0.0.1" }, want: "credentials in its server URL"},
		"no server":       {mutate: func(c *clientcmdapi.Config) { c.Clusters["c"].Server = "" }, want: "must have a server"},
		"insecure":        {mutate: func(c *clientcmdapi.Config) { c.Clusters["c"].InsecureSkipTLSVerify = true }, want: "insecure-skip-tls-verify"},
		"ca file":         {mutate: func(c *clientcmdapi.Config) { c.Clusters["c"].CertificateAuthority = "/etc/ca.crt" }, want: "not a file"},
		"exec plugin":     {mutate: func(c *clientcmdapi.Config) { c.AuthInfos["u"].Exec = &clientcmdapi.ExecConfig{Command: "rm"} }, want: "exec plugin"},
		"auth provider": {mutate: func(c *clientcmdapi.Config) {
			c.AuthInfos["u"].AuthProvider = &clientcmdapi.AuthProviderConfig{Name: "gcp"}
		}, want: "auth provider"},
		"token file": {mutate: func(c *clientcmdapi.Config) { c.AuthInfos["u"].TokenFile = "/var/run/token" }, want: "not in files"},
		"half certificate": {mutate: func(c *clientcmdapi.Config) {
			c.AuthInfos["u"] = &clientcmdapi.AuthInfo{ClientCertificateData: []byte("x")}
		}, want: "both client-certificate-data"},
		"no credentials": {mutate: func(c *clientcmdapi.Config) { c.AuthInfos["u"] = &clientcmdapi.AuthInfo{} }, want: "token or a client certificate"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			data := []byte(tc.raw)
			if tc.mutate != nil {
				cfg := valid()
				tc.mutate(cfg)
				data = encode(t, cfg)
			}
			errs := Check(data, field.NewPath("spec", "kubeconfig"))
			if len(errs) == 0 {
				t.Fatal("accepted")
			}
			msg := errs.ToAggregate().Error()
			if !strings.Contains(msg, tc.want) {
				t.Errorf("error %q does not say %q", msg, tc.want)
			}
			if strings.Contains(msg, secretToken) || strings.Contains(msg, "apiVersion") {
				t.Errorf("the error repeats the kubeconfig: %q", msg)
			}
			if errs[0].Field != "spec.kubeconfig" {
				t.Errorf("field %q, want spec.kubeconfig", errs[0].Field)
			}
			if _, err := RESTConfig(data); err == nil {
				t.Error("RESTConfig accepted what Check refuses")
			}
		})
	}
	if errs := Check(nil, field.NewPath("spec", "kubeconfig")); len(errs) != 1 || errs[0].Type != field.ErrorTypeRequired {
		t.Errorf("missing kubeconfig: %v", errs)
	}
	if errs := Check(make([]byte, MaxSize+1), field.NewPath("spec", "kubeconfig")); len(errs) != 1 || errs[0].Type != field.ErrorTypeTooLong {
		t.Errorf("oversized kubeconfig: %v", errs)
	}
}
