// Package kubeconfig decides which kubeconfigs Plinth accepts for target clusters and turns
// them into REST configs. A registered kubeconfig is used by plinth-controller on its own
// host, so it must be self-contained: everything inline, nothing to run and no file to read.
// plinth-apiserver validates with Check on every write; plinth-controller checks again before
// use, so a kubeconfig that slipped in some other way is still never executed.
package kubeconfig

import (
	"fmt"
	"net/url"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// MaxSize bounds a kubeconfig: large enough for a certificate chain and a long token, small
// enough that a Cluster object stays far below etcd's request limit.
const MaxSize = 256 << 10

// Check validates a kubeconfig and returns its problems under path. The kubeconfig's content
// never appears in the errors: their bad value is omitted.
func Check(data []byte, path *field.Path) field.ErrorList {
	_, errs := load(data, path)
	return errs
}

// RESTConfig checks a kubeconfig and returns the REST config of its current context.
func RESTConfig(data []byte) (*rest.Config, error) {
	cfg, errs := load(data, field.NewPath("kubeconfig"))
	if len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	return clientcmd.NewDefaultClientConfig(*cfg, &clientcmd.ConfigOverrides{}).ClientConfig()
}

func invalid(path *field.Path, format string, args ...any) *field.Error {
	return field.Invalid(path, field.OmitValueType{}, fmt.Sprintf(format, args...))
}

// load parses data and checks the current context, its cluster and its user.
func load(data []byte, path *field.Path) (*clientcmdapi.Config, field.ErrorList) {
	if len(data) == 0 {
		return nil, field.ErrorList{field.Required(path, "a kubeconfig is required")}
	}
	if len(data) > MaxSize {
		return nil, field.ErrorList{field.TooLong(path, field.OmitValueType{}, MaxSize)}
	}
	cfg, err := clientcmd.Load(data)
	if err != nil {
		// The parser's message may quote the input; say only what is wrong.
		return nil, field.ErrorList{invalid(path, "is not a kubeconfig in YAML or JSON")}
	}
	ctxName := cfg.CurrentContext
	if ctxName == "" && len(cfg.Contexts) == 1 {
		for name := range cfg.Contexts {
			ctxName = name
		}
		cfg.CurrentContext = ctxName
	}
	kctx, ok := cfg.Contexts[ctxName]
	if !ok || ctxName == "" {
		return nil, field.ErrorList{invalid(path, "must set current-context to one of its contexts")}
	}
	var errs field.ErrorList
	cluster, ok := cfg.Clusters[kctx.Cluster]
	if !ok {
		errs = append(errs, invalid(path, "context %q names cluster %q, which it does not define", ctxName, kctx.Cluster))
	} else {
		errs = append(errs, checkCluster(kctx.Cluster, cluster, path)...)
	}
	user, ok := cfg.AuthInfos[kctx.AuthInfo]
	if !ok {
		errs = append(errs, invalid(path, "context %q names user %q, which it does not define", ctxName, kctx.AuthInfo))
	} else {
		errs = append(errs, checkUser(kctx.AuthInfo, user, path)...)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	// Only the current context is ever used: drop the rest, so nothing else is kept around.
	return &clientcmdapi.Config{
		CurrentContext: ctxName,
		Contexts:       map[string]*clientcmdapi.Context{ctxName: kctx},
		Clusters:       map[string]*clientcmdapi.Cluster{kctx.Cluster: cluster},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{kctx.AuthInfo: user},
	}, nil
}

func checkCluster(name string, c *clientcmdapi.Cluster, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	u, err := url.Parse(c.Server)
	switch {
	case c.Server == "":
		errs = append(errs, invalid(path, "cluster %q must have a server", name))
	case err != nil || u.Scheme != "https" || u.Host == "":
		errs = append(errs, invalid(path, "cluster %q must have an https:// server URL", name))
	case u.User != nil:
		// The URL is shown in status and logs; credentials belong in the user entry.
		errs = append(errs, invalid(path, "cluster %q must not carry credentials in its server URL", name))
	}
	if c.InsecureSkipTLSVerify {
		errs = append(errs, invalid(path, "cluster %q must verify the server's certificate: insecure-skip-tls-verify would send the credentials to anyone", name))
	}
	if c.CertificateAuthority != "" {
		errs = append(errs, invalid(path, "cluster %q must give certificate-authority-data inline, not a file", name))
	}
	return errs
}

func checkUser(name string, u *clientcmdapi.AuthInfo, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if u.Exec != nil {
		errs = append(errs, invalid(path, "user %q must not use an exec plugin: plinth-controller would run it on its own host", name))
	}
	if u.AuthProvider != nil {
		errs = append(errs, invalid(path, "user %q must not use an auth provider; give a token or a client certificate", name))
	}
	if u.ClientCertificate != "" || u.ClientKey != "" || u.TokenFile != "" {
		errs = append(errs, invalid(path, "user %q must give its credentials inline, not in files", name))
	}
	hasCert := len(u.ClientCertificateData) > 0 && len(u.ClientKeyData) > 0
	if len(u.ClientCertificateData) > 0 != (len(u.ClientKeyData) > 0) {
		errs = append(errs, invalid(path, "user %q must give both client-certificate-data and client-key-data", name))
	}
	if !hasCert && u.Token == "" && u.Exec == nil && u.AuthProvider == nil && u.TokenFile == "" && u.ClientCertificate == "" {
		errs = append(errs, invalid(path, "user %q must authenticate with a token or a client certificate", name))
	}
	return errs
}
