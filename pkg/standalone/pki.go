// Package standalone prepares what plinth-apiserver needs to serve without a kube-apiserver in
// front of it: a private CA, a serving certificate, an administrator's client certificate in
// group system:masters, and a kubeconfig for kubectl. Files are created once and reused, so a
// kubeconfig handed out earlier keeps working across restarts.
package standalone

import (
	"net"
	"path/filepath"

	"github.com/plinth-dev/plinth/pkg/pki"
)

// AdminUser and AdminGroup identify the standalone administrator.
const (
	AdminUser  = "plinth-admin"
	AdminGroup = "system:masters"
)

// Files are the paths of the standalone credentials.
type Files struct {
	CA, Serving, Admin pki.Pair
	Kubeconfig         string
}

// FilesIn lays out the files under dir: pki/ for keys and certificates, admin.kubeconfig at the top.
func FilesIn(dir string) Files {
	certs := filepath.Join(dir, "pki")
	return Files{
		CA:         pki.PairIn(certs, "ca"),
		Serving:    pki.PairIn(certs, "serving"),
		Admin:      pki.PairIn(certs, "admin"),
		Kubeconfig: filepath.Join(dir, "admin.kubeconfig"),
	}
}

// EnsurePKI creates the CA, serving and admin certificates unless they exist.
func EnsurePKI(f Files) error {
	ca, err := pki.LoadOrCreateCA(f.CA, "plinth-standalone-ca")
	if err != nil {
		return err
	}
	if err := ca.EnsureServing(f.Serving, "plinth-apiserver", []string{"localhost"},
		[]net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1")}); err != nil {
		return err
	}
	return ca.EnsureClient(f.Admin, AdminUser, AdminGroup)
}

// WriteKubeconfig writes the administrator's kubeconfig for a server at serverURL.
func WriteKubeconfig(f Files, serverURL string) error {
	return pki.WriteKubeconfig(f.Kubeconfig, serverURL, f.CA.Cert, f.Admin, AdminUser, "default")
}
