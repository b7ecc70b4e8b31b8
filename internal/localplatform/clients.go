package localplatform

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// kubectl runs the platform's kubectl as the admin.
func (p *Platform) kubectl(ctx context.Context, args ...string) error {
	return p.kubectlStdin(ctx, "", args...)
}

// kubectlStdin runs the platform's kubectl as the admin with stdin as its standard input.
func (p *Platform) kubectlStdin(ctx context.Context, stdin string, args ...string) error {
	cmd := exec.CommandContext(ctx, p.bin("kubectl"), append([]string{"--kubeconfig", p.AdminKubeconfig()}, args...)...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

func (p *Platform) adminClient() (kubernetes.Interface, error) {
	cfg, err := p.AdminConfig()
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(cfg)
}

// AdminConfig is a REST config for the admin identity.
func (p *Platform) AdminConfig() (*rest.Config, error) { return p.ConfigFor("admin") }

// ConfigFor is a REST config for a demo identity, without client-side throttling.
func (p *Platform) ConfigFor(user string) (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", p.Kubeconfig(user))
	if err != nil {
		return nil, err
	}
	cfg.QPS = -1
	cfg.Timeout = 30 * time.Second
	return cfg, nil
}

// PlinthDirectConfig is the admin's REST config aimed at plinth-apiserver itself rather than
// through the aggregator; plinth-apiserver accepts the admin's client certificate through
// delegated authentication. Its serving certificate, from plinth-apiserver's own CA, names
// 127.0.0.1 besides the in-cluster Service, so the connection is verified as the
// aggregator's is.
func (p *Platform) PlinthDirectConfig() (*rest.Config, error) {
	cfg, err := p.AdminConfig()
	if err != nil {
		return nil, err
	}
	caPEM, err := os.ReadFile(filepath.Join(p.pkiDir, "plinth-ca.crt"))
	if err != nil {
		return nil, err
	}
	cfg.Host = p.PlinthURL()
	cfg.TLSClientConfig.Insecure, cfg.TLSClientConfig.CAData, cfg.TLSClientConfig.CAFile = false, caPEM, ""
	return cfg, nil
}
