package localplatform

import (
	"net"
	"path/filepath"
	"strings"

	"github.com/plinth-dev/plinth/pkg/keyring"
	"github.com/plinth-dev/plinth/pkg/pki"
)

// ensurePKI creates, once, the cluster CA (client certificates of every identity and
// kube-apiserver's serving certificate), the front-proxy CA and client, the service-account
// signing key, and plinth-apiserver's own CA and serving certificate.
func (p *Platform) ensurePKI() error {
	ca, err := pki.LoadOrCreateCA(pki.PairIn(p.pkiDir, "ca"), "plinth-local-cluster-ca")
	if err != nil {
		return err
	}
	ips := []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.0.0.1")}
	if p.cfg.RealNode != nil {
		// Pods reach kube-apiserver at the node's address too.
		ips = append(ips, net.ParseIP(p.NodeAddress()))
	}
	if err := ca.EnsureServing(pki.PairIn(p.pkiDir, "kube-apiserver"), "kube-apiserver",
		[]string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
		ips); err != nil {
		return err
	}
	if p.cfg.RealNode != nil {
		if err := p.ensureNodePKI(ca); err != nil {
			return err
		}
	}
	for _, id := range Identities {
		pair := pki.PairIn(p.pkiDir, strings.TrimSuffix(KubeconfigName(id.User), ".kubeconfig"))
		if err := ca.EnsureClient(pair, id.User, id.Groups...); err != nil {
			return err
		}
		ns := id.Namespace
		if ns == "" {
			ns = "default"
		}
		if err := pki.WriteKubeconfig(p.Kubeconfig(id.User), p.kubeURL, ca.Cert, pair, id.User, ns); err != nil {
			return err
		}
	}
	if err := ca.EnsureClient(pki.PairIn(p.pkiDir, "plinth-target"), TargetUser, "plinth:targets"); err != nil {
		return err
	}
	if err := keyring.EnsureFile(p.EncryptionKeyFile()); err != nil {
		return err
	}
	apiserverClient := pki.PairIn(p.pkiDir, "plinth-apiserver-client")
	if err := ca.EnsureClient(apiserverClient, apiserverUser, "system:serviceaccounts", "system:serviceaccounts:plinth-system"); err != nil {
		return err
	}
	if err := pki.WriteKubeconfig(p.plinthKubeconfig(), p.kubeURL, ca.Cert, apiserverClient, apiserverUser, "plinth-system"); err != nil {
		return err
	}
	frontProxy, err := pki.LoadOrCreateCA(pki.PairIn(p.pkiDir, "front-proxy-ca"), "plinth-local-front-proxy-ca")
	if err != nil {
		return err
	}
	if err := frontProxy.EnsureClient(pki.PairIn(p.pkiDir, "front-proxy-client"), "front-proxy-client"); err != nil {
		return err
	}
	if err := pki.EnsureSigningKey(filepath.Join(p.pkiDir, "sa.key"), filepath.Join(p.pkiDir, "sa.pub")); err != nil {
		return err
	}
	plinthCA, err := pki.LoadOrCreateCA(pki.PairIn(p.pkiDir, "plinth-ca"), "plinth-apiserver-ca")
	if err != nil {
		return err
	}
	return plinthCA.EnsureServing(pki.PairIn(p.pkiDir, "plinth-serving"), "plinth-apiserver",
		[]string{"plinth-apiserver.plinth-system.svc", "plinth-apiserver.plinth-system.svc.cluster.local", "localhost"},
		[]net.IP{net.ParseIP("127.0.0.1")})
}

// plinthKubeconfig is plinth-apiserver's own kubeconfig, for delegated authentication and
// authorization.
func (p *Platform) plinthKubeconfig() string {
	return filepath.Join(p.cfg.Dir, "plinth-apiserver.kubeconfig")
}

// TargetKubeconfig is a self-contained kubeconfig of the plinth:targets identity for the
// local kube-apiserver at server (tests point it through a proxy).
func (p *Platform) TargetKubeconfig(server string) ([]byte, error) {
	return pki.InlineKubeconfig(server, filepath.Join(p.pkiDir, "ca.crt"), pki.PairIn(p.pkiDir, "plinth-target"), TargetUser)
}

// AdminTargetKubeconfig is a self-contained kubeconfig of the admin identity (system:masters)
// for the local kube-apiserver: registered as a Cluster's, it lets plinth-controller install
// Flux, whose install binds cluster-admin, which only a cluster-admin may grant.
func (p *Platform) AdminTargetKubeconfig() ([]byte, error) {
	return pki.InlineKubeconfig(p.kubeURL, filepath.Join(p.pkiDir, "ca.crt"), pki.PairIn(p.pkiDir, strings.TrimSuffix(KubeconfigName("admin"), ".kubeconfig")), "admin")
}
