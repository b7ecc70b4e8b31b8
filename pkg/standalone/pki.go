// Package standalone prepares what plinth-apiserver needs to serve without a kube-apiserver in
// front of it: a private CA, a serving certificate, an administrator's client certificate in
// group system:masters, and a kubeconfig for kubectl. Files are created once and reused, so a
// kubeconfig handed out earlier keeps working across restarts.
package standalone

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
)

// AdminUser and AdminGroup identify the standalone administrator.
const (
	AdminUser  = "plinth-admin"
	AdminGroup = "system:masters"
)

// Files are the paths of the standalone credentials.
type Files struct {
	CACert, CAKey           string
	ServingCert, ServingKey string
	AdminCert, AdminKey     string
	Kubeconfig              string
}

// FilesIn lays out the files under dir: pki/ for keys and certificates, admin.kubeconfig at the top.
func FilesIn(dir string) Files {
	pki := filepath.Join(dir, "pki")
	return Files{
		CACert: filepath.Join(pki, "ca.crt"), CAKey: filepath.Join(pki, "ca.key"),
		ServingCert: filepath.Join(pki, "serving.crt"), ServingKey: filepath.Join(pki, "serving.key"),
		AdminCert: filepath.Join(pki, "admin.crt"), AdminKey: filepath.Join(pki, "admin.key"),
		Kubeconfig: filepath.Join(dir, "admin.kubeconfig"),
	}
}

// EnsurePKI creates the CA, serving and admin certificates unless they exist.
func EnsurePKI(f Files) error {
	if err := os.MkdirAll(filepath.Dir(f.CACert), 0o700); err != nil {
		return err
	}
	if exists(f.CACert) && exists(f.CAKey) && exists(f.ServingCert) && exists(f.ServingKey) && exists(f.AdminCert) && exists(f.AdminKey) {
		return nil
	}
	caKey, err := newKey()
	if err != nil {
		return err
	}
	caCert, err := certutil.NewSelfSignedCACert(certutil.Config{CommonName: "plinth-standalone-ca"}, caKey)
	if err != nil {
		return fmt.Errorf("creating CA: %w", err)
	}
	if err := writePair(f.CACert, f.CAKey, caCert, caKey); err != nil {
		return err
	}
	serving := &x509.Certificate{
		Subject:     pkix.Name{CommonName: "plinth-apiserver"},
		DNSNames:    []string{"localhost"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1")},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if err := issue(serving, caCert, caKey, f.ServingCert, f.ServingKey); err != nil {
		return err
	}
	admin := &x509.Certificate{
		Subject:     pkix.Name{CommonName: AdminUser, Organization: []string{AdminGroup}},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	return issue(admin, caCert, caKey, f.AdminCert, f.AdminKey)
}

// WriteKubeconfig writes the administrator's kubeconfig for a server at serverURL.
func WriteKubeconfig(f Files, serverURL string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["plinth"] = &clientcmdapi.Cluster{Server: serverURL, CertificateAuthority: abs(f.CACert)}
	cfg.AuthInfos[AdminUser] = &clientcmdapi.AuthInfo{ClientCertificate: abs(f.AdminCert), ClientKey: abs(f.AdminKey)}
	cfg.Contexts["plinth"] = &clientcmdapi.Context{Cluster: "plinth", AuthInfo: AdminUser, Namespace: "default"}
	cfg.CurrentContext = "plinth"
	return clientcmd.WriteToFile(*cfg, f.Kubeconfig)
}

func issue(template, caCert *x509.Certificate, caKey crypto.Signer, certPath, keyPath string) error {
	key, err := newKey()
	if err != nil {
		return err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return err
	}
	template.SerialNumber = serial
	template.NotBefore = time.Now().Add(-time.Hour)
	template.NotAfter = time.Now().Add(5 * 365 * 24 * time.Hour)
	template.KeyUsage = x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment
	der, err := x509.CreateCertificate(rand.Reader, template, caCert, key.Public(), caKey)
	if err != nil {
		return fmt.Errorf("issuing %s: %w", template.Subject.CommonName, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return err
	}
	return writePair(certPath, keyPath, cert, key)
}

func newKey() (*ecdsa.PrivateKey, error) {
	return ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
}

func writePair(certPath, keyPath string, cert *x509.Certificate, key *ecdsa.PrivateKey) error {
	keyPEM, err := keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return err
	}
	if err := keyutil.WriteKey(keyPath, keyPEM); err != nil {
		return err
	}
	certPEM, err := certutil.EncodeCertificates(cert)
	if err != nil {
		return err
	}
	return certutil.WriteCert(certPath, certPEM)
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return !errors.Is(err, os.ErrNotExist)
}

func abs(path string) string {
	if a, err := filepath.Abs(path); err == nil {
		return a
	}
	return path
}
