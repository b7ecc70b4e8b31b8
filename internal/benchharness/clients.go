package benchharness

import (
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/plinth-dev/plinth/internal/localplatform"
	"github.com/plinth-dev/plinth/pkg/generated/clientset/versioned"
)

// Clients are the admin's clients of a benchmark's platform, without client-side throttling.
type Clients struct {
	Config  *rest.Config
	Plinth  versioned.Interface
	Kube    kubernetes.Interface
	Dynamic dynamic.Interface
}

// AdminClients builds the admin's clients of p.
func AdminClients(p *localplatform.Platform) (*Clients, error) {
	cfg, err := p.AdminConfig()
	if err != nil {
		return nil, err
	}
	c := &Clients{Config: cfg}
	if c.Plinth, err = versioned.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if c.Kube, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if c.Dynamic, err = dynamic.NewForConfig(cfg); err != nil {
		return nil, err
	}
	return c, nil
}
