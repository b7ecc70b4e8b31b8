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
	"sync"
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
	edgeName := flag.String("edge-cluster", "edge", "name of the second target cluster (its own etcd, kube-apiserver and kwok, GitOps engine Kubectl); empty starts none")
	edgeCfg := localplatform.Config{KubernetesOnly: true, Nodes: 1}
	flag.IntVar(&edgeCfg.EtcdPort, "edge-etcd-port", 22379, "the second cluster's etcd client port")
	flag.IntVar(&edgeCfg.EtcdPeerPort, "edge-etcd-peer-port", 22380, "the second cluster's etcd peer port")
	flag.IntVar(&edgeCfg.KubePort, "edge-kube-port", 26443, "the second cluster's kube-apiserver secure port")
	flag.IntVar(&edgeCfg.KwokPort, "edge-kwok-port", 28281, "the second cluster's kwok server port")
	chartDir := flag.String("demo-chart", filepath.Join("artifacts", "examples", "charts", "hello"), "chart pushed to the local registry for the tour's infrastructure packs; empty pushes none")
	flag.Parse()
	// The tour shows drift within seconds of an edit.
	cfg.ControllerArgs = append(cfg.ControllerArgs, "--pack-drift-interval=5s")
	edgeCfg.BinDir, edgeCfg.Progress = cfg.BinDir, cfg.Progress
	edgeCfg.Dir = filepath.Join(filepath.Dir(cfg.Dir), *edgeName)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	started := time.Now()
	// The second cluster starts beside the platform: its own processes, no Plinth.
	type edgeStart struct {
		p   *localplatform.Platform
		err error
	}
	edgeDone := make(chan edgeStart, 1)
	if *edgeName != "" {
		go func() {
			p, err := localplatform.Start(ctx, edgeCfg)
			edgeDone <- edgeStart{p, err}
		}()
	}
	platform, err := localplatform.Start(ctx, cfg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "plinth: the local platform did not start: %v\n", err)
		os.Exit(1)
	}
	var edge *localplatform.Platform
	if *edgeName != "" {
		e := <-edgeDone
		if e.err == nil {
			e.err = registerEdge(ctx, platform, e.p, cfg.BinDir, *edgeName)
		}
		if e.err != nil {
			fmt.Fprintf(os.Stderr, "plinth: the second cluster %s did not start: %v\n", *edgeName, e.err)
			platform.Stop()
			if e.p != nil {
				e.p.Stop()
			}
			os.Exit(1)
		}
		edge = e.p
	}
	if *chartDir != "" {
		if ref, err := pushDemoChart(ctx, platform.RegistryEndpoint(), platform.RegistryCredential, *chartDir); err != nil {
			fmt.Fprintf(os.Stderr, "plinth: pushing the demo chart failed (the tour's packs need it): %v\n", err)
		} else {
			fmt.Fprintf(os.Stderr, "plinth: demo chart pushed to %s\n", ref)
		}
	}
	abs, _ := filepath.Abs(platform.AdminKubeconfig())
	fmt.Printf("plinth is ready in %s: export KUBECONFIG=%s (demo users: alice, bob, eve, carol, dana in %s; Ctrl-C stops)\n",
		time.Since(started).Round(100*time.Millisecond), abs, filepath.Dir(abs))
	<-ctx.Done()
	// A second Ctrl-C kills local-up at once; its children die with it.
	stop()
	fmt.Fprintln(os.Stderr, "plinth: stopping plinth-controller, plinth-apiserver, Flux, kwok, kube-scheduler, kube-controller-manager, kube-apiserver, etcd")
	// Both clusters stop at once: together they still end within ten seconds.
	var stopped sync.WaitGroup
	if edge != nil {
		stopped.Add(1)
		go func() {
			defer stopped.Done()
			edge.Stop()
		}()
	}
	platform.Stop()
	stopped.Wait()
}
