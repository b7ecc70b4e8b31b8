// Package pki creates the small certificate authorities Plinth needs when it runs without a
// cluster's own PKI: a CA, serving certificates and client certificates (whose subject is the
// Kubernetes user and groups), and kubeconfigs for those clients. Files are created once and
// reused, so credentials handed out earlier keep working across restarts.
package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
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

// Pair is the paths of a PEM certificate and its private key.
type Pair struct {
	Cert, Key string
}

// PairIn names <dir>/<name>.crt and <dir>/<name>.key.
func PairIn(dir, name string) Pair {
	return Pair{Cert: filepath.Join(dir, name+".crt"), Key: filepath.Join(dir, name+".key")}
}

// Exists reports whether both files are present.
func (p Pair) Exists() bool { return exists(p.Cert) && exists(p.Key) }

// CA is a certificate authority loaded into memory.
type CA struct {
	Pair
	cert *x509.Certificate
	key  crypto.Signer
}

// LoadOrCreateCA loads the CA at p, creating a self-signed one named commonName if missing.
func LoadOrCreateCA(p Pair, commonName string) (*CA, error) {
	if !p.Exists() {
		key, err := newKey()
		if err != nil {
			return nil, err
		}
		cert, err := certutil.NewSelfSignedCACert(certutil.Config{CommonName: commonName}, key)
		if err != nil {
			return nil, fmt.Errorf("creating CA %s: %w", commonName, err)
		}
		if err := write(p, cert, key); err != nil {
			return nil, err
		}
	}
	certs, err := certutil.CertsFromFile(p.Cert)
	if err != nil {
		return nil, err
	}
	key, err := keyutil.PrivateKeyFromFile(p.Key)
	if err != nil {
		return nil, err
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("%s is not a signing key", p.Key)
	}
	return &CA{Pair: p, cert: certs[0], key: signer}, nil
}

// EnsureServing issues a serving certificate for the names and addresses unless p exists.
func (ca *CA) EnsureServing(p Pair, commonName string, dnsNames []string, ips []net.IP) error {
	if p.Exists() {
		return nil
	}
	return ca.issue(p, &x509.Certificate{
		Subject:     pkix.Name{CommonName: commonName},
		DNSNames:    dnsNames,
		IPAddresses: ips,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
}

// EnsureClient issues a client certificate for a Kubernetes user (the common name) in groups
// (the organizations) unless p exists.
func (ca *CA) EnsureClient(p Pair, user string, groups ...string) error {
	if p.Exists() {
		return nil
	}
	return ca.issue(p, &x509.Certificate{
		Subject:     pkix.Name{CommonName: user, Organization: groups},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
}

// CertPEM returns the CA certificate, PEM encoded.
func (ca *CA) CertPEM() ([]byte, error) { return os.ReadFile(ca.Cert) }

func (ca *CA) issue(p Pair, template *x509.Certificate) error {
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
	der, err := x509.CreateCertificate(rand.Reader, template, ca.cert, key.Public(), ca.key)
	if err != nil {
		return fmt.Errorf("issuing %s: %w", template.Subject.CommonName, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return err
	}
	return write(p, cert, key)
}

// EnsureSigningKey creates a key pair for signing tokens (service accounts) unless present.
func EnsureSigningKey(privatePath, publicPath string) error {
	if exists(privatePath) && exists(publicPath) {
		return nil
	}
	key, err := newKey()
	if err != nil {
		return err
	}
	keyPEM, err := keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return err
	}
	if err := keyutil.WriteKey(privatePath, keyPEM); err != nil {
		return err
	}
	der, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return err
	}
	return os.WriteFile(publicPath, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o644)
}

// WriteKubeconfig writes a kubeconfig that reaches server (trusting caCert) as the client pair.
func WriteKubeconfig(path, server, caCert string, client Pair, user, namespace string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["plinth"] = &clientcmdapi.Cluster{Server: server, CertificateAuthority: abs(caCert)}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificate: abs(client.Cert), ClientKey: abs(client.Key)}
	cfg.Contexts["plinth"] = &clientcmdapi.Context{Cluster: "plinth", AuthInfo: user, Namespace: namespace}
	cfg.CurrentContext = "plinth"
	return clientcmd.WriteToFile(*cfg, path)
}

// InlineKubeconfig returns a self-contained kubeconfig (certificates and key embedded, no file
// references) that reaches server as the client pair: the form a target Cluster registration
// takes.
func InlineKubeconfig(server, caCert string, client Pair, user string) ([]byte, error) {
	ca, err := os.ReadFile(caCert)
	if err != nil {
		return nil, err
	}
	cert, err := os.ReadFile(client.Cert)
	if err != nil {
		return nil, err
	}
	key, err := os.ReadFile(client.Key)
	if err != nil {
		return nil, err
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["target"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificateData: cert, ClientKeyData: key}
	cfg.Contexts["target"] = &clientcmdapi.Context{Cluster: "target", AuthInfo: user}
	cfg.CurrentContext = "target"
	return clientcmd.Write(*cfg)
}

func newKey() (*ecdsa.PrivateKey, error) {
	return ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
}

func write(p Pair, cert *x509.Certificate, key *ecdsa.PrivateKey) error {
	if err := os.MkdirAll(filepath.Dir(p.Cert), 0o700); err != nil {
		return err
	}
	keyPEM, err := keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return err
	}
	if err := keyutil.WriteKey(p.Key, keyPEM); err != nil {
		return err
	}
	certPEM, err := certutil.EncodeCertificates(cert)
	if err != nil {
		return err
	}
	return certutil.WriteCert(p.Cert, certPEM)
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
