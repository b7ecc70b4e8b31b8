// Command local-up is `make run`: it starts the local platform (etcd, kube-apiserver,
// kube-controller-manager, plinth-apiserver behind an APIService, plinth-controller, Flux's
// controllers), prints one line with the
// admin kubeconfig, reports and restarts a component that dies, and stops everything in order
// on Ctrl-C, within ten seconds. Its children die with it even when it is killed.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/plinth-dev/plinth/internal/localplatform"
)

func main() {
	cfg := localplatform.Config{Progress: os.Stderr}
	flag.StringVar(&cfg.Dir, "dir", filepath.Join(".plinth", "local"), "directory for certificates, kubeconfigs, data and logs")
	flag.StringVar(&cfg.BinDir, "bin-dir", filepath.Join("_output", "bin"), "directory of the component binaries")
	flag.StringVar(&cfg.ArtifactsDir, "artifacts", filepath.Join("artifacts", "deploy"), "the install manifests to apply")
	flag.IntVar(&cfg.EtcdPort, "etcd-port", 12379, "etcd client port")
	flag.IntVar(&cfg.EtcdPeerPort, "etcd-peer-port", 12380, "etcd peer port")
	flag.IntVar(&cfg.KubePort, "kube-port", 16443, "kube-apiserver secure port")
	flag.IntVar(&cfg.PlinthPort, "plinth-port", 18443, "plinth-apiserver secure port")
	flag.IntVar(&cfg.ControllerPort, "controller-port", 18280, "plinth-controller health and metrics port")
	flag.IntVar(&cfg.KwokPort, "kwok-port", 18281, "kwok's own server port")
	flag.IntVar(&cfg.RegistryPort, "registry-port", 5000, "localhost port of Cluster local's OCI registry (run by plinth-controller; Flux pulls from it)")
	flag.IntVar(&cfg.Nodes, "nodes", 3, "fake nodes that run pods")
	flag.StringVar(&cfg.ProvisionersConfig, "provisioners-config", filepath.Join("artifacts", "controller", "provisioners.yaml"), "plinth-controller's template provisioners file")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	started := time.Now()
	platform, err := localplatform.Start(ctx, cfg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "plinth: the local platform did not start: %v\n", err)
		os.Exit(1)
	}
	abs, _ := filepath.Abs(platform.AdminKubeconfig())
	fmt.Printf("plinth is ready in %s: export KUBECONFIG=%s (demo users: alice, bob, carol, dana in %s; Ctrl-C stops)\n",
		time.Since(started).Round(100*time.Millisecond), abs, filepath.Dir(abs))
	<-ctx.Done()
	// A second Ctrl-C kills local-up at once; its children die with it.
	stop()
	fmt.Fprintln(os.Stderr, "plinth: stopping plinth-controller, plinth-apiserver, Flux, kwok, kube-scheduler, kube-controller-manager, kube-apiserver, etcd")
	platform.Stop()
}
