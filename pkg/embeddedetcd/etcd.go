// Package embeddedetcd runs a single-member etcd inside plinth-apiserver, so one machine needs
// nothing else. It listens on loopback only, without TLS, on ports chosen at start.
package embeddedetcd

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// Options configure the embedded etcd.
type Options struct {
	// Dir holds etcd's data; it survives restarts.
	Dir string
	// UnsafeNoFsync skips fsync: faster, but a machine crash can lose recent writes. For tests
	// and benchmarks only.
	UnsafeNoFsync bool
}

// Etcd is a running embedded etcd.
type Etcd struct {
	server    *embed.Etcd
	ClientURL string
}

// Start starts etcd and waits until it serves.
func Start(ctx context.Context, o Options) (*Etcd, error) {
	if err := os.MkdirAll(o.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating etcd data dir: %w", err)
	}
	ports, err := freeLoopbackPorts(2)
	if err != nil {
		return nil, err
	}
	clientURL := url.URL{Scheme: "http", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0]))}
	peerURL := url.URL{Scheme: "http", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[1]))}

	cfg := embed.NewConfig()
	cfg.Name = "plinth"
	cfg.Dir = filepath.Clean(o.Dir)
	cfg.UnsafeNoFsync = o.UnsafeNoFsync
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{clientURL}, []url.URL{clientURL}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peerURL}, []url.URL{peerURL}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	// etcd's own metrics and logs stay quiet: plinth-apiserver reports storage health itself.
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.New(zapcore.NewNopCore()))
	// Keep history compact: the API server compacts through its own client as well.
	cfg.AutoCompactionMode = "periodic"
	cfg.AutoCompactionRetention = "1h"

	server, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, fmt.Errorf("starting embedded etcd in %s: %w", o.Dir, err)
	}
	select {
	case <-server.Server.ReadyNotify():
	case <-time.After(60 * time.Second):
		server.Close()
		return nil, fmt.Errorf("embedded etcd in %s did not become ready within 60s", o.Dir)
	case <-ctx.Done():
		server.Close()
		return nil, ctx.Err()
	}
	return &Etcd{server: server, ClientURL: clientURL.String()}, nil
}

// Err reports a fatal etcd error.
func (e *Etcd) Err() <-chan error { return e.server.Err() }

// Close stops etcd and waits for it.
func (e *Etcd) Close() { e.server.Close() }

// freeLoopbackPorts asks the kernel for free ports. Another process could take one before
// etcd binds it; a start failure then reports the address in use.
func freeLoopbackPorts(n int) ([]int, error) {
	var ports []int
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("finding a free port: %w", err)
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
