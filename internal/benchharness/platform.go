package benchharness

import (
	"context"
	"os"
	"path/filepath"

	"github.com/plinth-dev/plinth/internal/localplatform"
)

// PlatformOptions are what a benchmark chooses about its platform.
type PlatformOptions struct {
	// BinDir holds the component binaries (make build and make tools put them in _output/bin).
	BinDir string
	// Nodes is how many kwok nodes run pods; each takes 250.
	Nodes int
	// ControllerArgs are extra plinth-controller flags.
	ControllerArgs []string
	// NoController leaves plinth-controller out, for benchmarks of the API servers alone.
	NoController bool
	// KubeAPIServerArgs are extra kube-apiserver flags.
	KubeAPIServerArgs []string
}

// StartPlatform starts a fresh local platform in a temporary directory on free ports, with
// etcd's fsync off (every component pays the same for storage, and the disk of a shared
// machine is not what is measured), reporting its steps on stderr. stop stops it and removes
// the directory.
func StartPlatform(ctx context.Context, opts PlatformOptions) (p *localplatform.Platform, stop func(), err error) {
	dir, err := os.MkdirTemp("", "plinth-bench-")
	if err != nil {
		return nil, nil, err
	}
	defer func() {
		if err != nil {
			os.RemoveAll(dir)
		}
	}()
	ports, err := localplatform.FreePorts(6)
	if err != nil {
		return nil, nil, err
	}
	p, err = localplatform.Start(ctx, localplatform.Config{
		Dir: dir, BinDir: opts.BinDir, ArtifactsDir: filepath.Join("artifacts", "deploy"),
		EtcdPort: ports[0], EtcdPeerPort: ports[1], KubePort: ports[2], PlinthPort: ports[3], ControllerPort: ports[4], KwokPort: ports[5],
		Nodes: opts.Nodes, EtcdUnsafeNoFsync: true, Progress: os.Stderr, ControllerArgs: opts.ControllerArgs,
		NoController: opts.NoController, KubeAPIServerArgs: opts.KubeAPIServerArgs,
	})
	if err != nil {
		return nil, nil, err
	}
	return p, func() { p.Stop(); os.RemoveAll(dir) }, nil
}
