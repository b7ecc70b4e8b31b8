package localplatform

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// ControllerPID is plinth-controller's process id, for measurements; 0 while it is down.
func (p *Platform) ControllerPID() int { return p.controller.PID() }

// PIDs are the process ids of etcd, kube-apiserver and plinth-apiserver, for measurements; 0
// for one that is down.
func (p *Platform) PIDs() (etcd, kubeAPIServer, plinthAPIServer int) {
	return p.etcd.PID(), p.kube.PID(), p.plinth.PID()
}

// ProfileCPU saves a CPU profile of kube-apiserver and of plinth-apiserver, taken at the same
// time for the given duration, as kube-apiserver.cpu.pprof and plinth-apiserver.cpu.pprof in dir
// (go tool pprof reads them).
func (p *Platform) ProfileCPU(ctx context.Context, dir string, d time.Duration) error {
	kubeCfg, err := p.AdminConfig()
	if err != nil {
		return err
	}
	plinthCfg, err := p.PlinthDirectConfig()
	if err != nil {
		return err
	}
	profile := func(cfg *rest.Config, file string) error {
		cfg = rest.CopyConfig(cfg)
		cfg.Timeout = 0 // the request lasts as long as the profile
		client, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return err
		}
		data, err := client.Discovery().RESTClient().Get().AbsPath("/debug/pprof/profile").
			Param("seconds", strconv.Itoa(int(d.Seconds()))).DoRaw(ctx)
		if err != nil {
			return fmt.Errorf("profile of %s: %w", cfg.Host, err)
		}
		return os.WriteFile(filepath.Join(dir, file), data, 0o644)
	}
	errs := make(chan error, 2)
	go func() { errs <- profile(kubeCfg, "kube-apiserver.cpu.pprof") }()
	go func() { errs <- profile(plinthCfg, "plinth-apiserver.cpu.pprof") }()
	return errors.Join(<-errs, <-errs)
}
