package localplatform

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/plinth-dev/plinth/internal/localplatform/supervisor"
)

// Component names for KillComponent and WaitComponentBack: the supervised processes' names.
const (
	ComponentEtcd              = "etcd"
	ComponentKubeAPIServer     = "kube-apiserver"
	ComponentPlinthAPIServer   = "plinth-apiserver"
	ComponentController        = "plinth-controller"
	ComponentStandbyController = "plinth-controller-standby"
)

// controllerLease is the Lease plinth-controller's replicas elect their leader with (the
// controller's defaults: --leader-elect-resource-namespace/-name).
const controllerLeaseNamespace, controllerLeaseName = "plinth-system", "plinth-controller"

// component is the supervised process called name, or nil.
func (p *Platform) component(name string) *supervisor.Process {
	switch name {
	case ComponentEtcd:
		return p.etcd
	case ComponentKubeAPIServer:
		return p.kube
	case ComponentPlinthAPIServer:
		return p.plinth
	case ComponentController:
		return p.controller
	case ComponentStandbyController:
		return p.standby
	case "kube-controller-manager":
		return p.kcm
	case "kube-scheduler":
		return p.scheduler
	case "kwok":
		return p.kwok
	}
	return nil
}

// KillComponent kills the running incarnation of the component called name with SIGKILL (its
// whole process group), as a crash would, and lets supervision restart it after the backoff.
// It returns the killed pid, for WaitComponentBack. Fault tests use it.
func (p *Platform) KillComponent(name string) (int, error) {
	c := p.component(name)
	if c == nil {
		return 0, fmt.Errorf("no running component %q", name)
	}
	return c.KillIncarnation()
}

// WaitComponentBack waits until the component called name runs again after the incarnation
// with pid killed, and its readiness check (the one Start waits on) passes; it returns the
// new pid.
func (p *Platform) WaitComponentBack(ctx context.Context, name string, killed int) (int, error) {
	c := p.component(name)
	if c == nil {
		return 0, fmt.Errorf("no running component %q", name)
	}
	return c.WaitBack(ctx, killed)
}

// ComponentPID is the running incarnation's pid of the component called name, or 0.
func (p *Platform) ComponentPID(name string) int { return p.component(name).PID() }

// StartStandbyController starts a second plinth-controller, serving its health port on port,
// with the same flags as the first: it waits on the Lease and takes over when the leader dies.
// Both share the registries' volume directory, so the standby serves Cluster local's registry
// with the same data once it leads.
func (p *Platform) StartStandbyController(port int) error {
	if p.standby != nil {
		return fmt.Errorf("a standby plinth-controller runs already")
	}
	address := fmt.Sprintf("127.0.0.1:%d", port)
	args, err := p.controllerArgs(address)
	if err != nil {
		return err
	}
	ready := listening(address)
	if p.standby, err = supervisor.Start(supervisor.Spec{
		Name: ComponentStandbyController, Path: p.bin("plinth-controller"), Args: args, LogDir: p.LogDir(), Ready: ready,
		Report: func(msg string) { fmt.Fprintf(p.cfg.Progress, "plinth: %s\n", msg) },
	}); err != nil {
		return err
	}
	return waitFor(context.Background(), ComponentStandbyController, 30*time.Second, p.standby, ready)
}

// LeadingController names the plinth-controller (ComponentController or
// ComponentStandbyController) whose process holds the controller's Lease now; the Lease's
// holder identity is <hostname>_<pid>. It fails when the holder is none of them (the lease is
// free, or held by a process that has died and not yet been replaced).
func (p *Platform) LeadingController(ctx context.Context) (string, error) {
	lease, err := p.admin.CoordinationV1().Leases(controllerLeaseNamespace).Get(ctx, controllerLeaseName, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	holder := ""
	if lease.Spec.HolderIdentity != nil {
		holder = *lease.Spec.HolderIdentity
	}
	pid, ok := holderPID(holder)
	if !ok {
		return "", fmt.Errorf("the lease's holder %q is not <host>_<pid>", holder)
	}
	for _, name := range []string{ComponentController, ComponentStandbyController} {
		if c := p.component(name); c != nil && c.PID() == pid {
			return name, nil
		}
	}
	return "", fmt.Errorf("the lease is held by %q, which is no running plinth-controller", holder)
}

// holderPID is the pid at the end of a <hostname>_<pid> leader identity.
func holderPID(identity string) (int, bool) {
	i := strings.LastIndexByte(identity, '_')
	if i < 0 {
		return 0, false
	}
	pid, err := strconv.Atoi(identity[i+1:])
	return pid, err == nil && pid > 0
}
