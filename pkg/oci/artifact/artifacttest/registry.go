// Package artifacttest runs a real OCI registry in the test process: the distribution v3 code
// that the registry:3 image runs, serving plain HTTP on a loopback port and storing on the
// filesystem under the test's temporary directory, with deletes enabled. It can be stopped and
// started again on the same port with the same data, as a restarting registry would.
package artifacttest

import (
	"context"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/distribution/distribution/v3/configuration"
	"github.com/distribution/distribution/v3/registry/handlers"
	// Registers the filesystem storage driver; NewApp panics without it.
	_ "github.com/distribution/distribution/v3/registry/storage/driver/filesystem"
	"github.com/sirupsen/logrus"
)

var quiet sync.Once

// Registry is a running (or stopped) in-process registry.
type Registry struct {
	// Endpoint is 127.0.0.1:<port>, the host and port clients push to.
	Endpoint string

	t   testing.TB
	dir string
	// failWrites makes every upload and manifest write answer 503, as a registry going down
	// mid-push does.
	failWrites atomic.Bool
	mu         sync.Mutex
	srv        *http.Server
	app        *handlers.App
	done       chan struct{}
}

// Start starts a registry on a free loopback port, stopped when the test ends.
func Start(t testing.TB) *Registry {
	t.Helper()
	// distribution logs through logrus's global logger, every 404 probe of a push at error
	// level; a test binary has no use for it.
	quiet.Do(func() { logrus.SetOutput(io.Discard) })
	r := &Registry{t: t, dir: t.TempDir()}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r.Endpoint = ln.Addr().String()
	r.serve(ln)
	t.Cleanup(r.Stop)
	return r
}

func (r *Registry) serve(ln net.Listener) {
	cfg := &configuration.Configuration{
		Storage: configuration.Storage{
			"filesystem":  configuration.Parameters{"rootdirectory": r.dir},
			"delete":      configuration.Parameters{"enabled": true},
			"maintenance": configuration.Parameters{"uploadpurging": map[any]any{"enabled": false}},
		},
	}
	cfg.HTTP.Secret = "artifacttest"
	cfg.Log.AccessLog.Disabled = true
	app := handlers.NewApp(context.Background(), cfg)
	handler := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method != http.MethodGet && req.Method != http.MethodHead && r.failWrites.Load() {
			http.Error(w, "unavailable", http.StatusServiceUnavailable)
			return
		}
		app.ServeHTTP(w, req)
	})
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	r.mu.Lock()
	r.srv, r.app, r.done = srv, app, done
	r.mu.Unlock()
}

// Stop stops serving: connections are refused until Restart. Stopping a stopped registry does
// nothing.
func (r *Registry) Stop() {
	r.mu.Lock()
	srv, app, done := r.srv, r.app, r.done
	r.srv, r.app, r.done = nil, nil, nil
	r.mu.Unlock()
	if srv == nil {
		return
	}
	_ = srv.Close()
	<-done
	_ = app.Shutdown()
}

// FailWrites makes the registry answer every write (uploads, manifests, deletes) with 503
// Service Unavailable while on, and reads as usual.
func (r *Registry) FailWrites(on bool) { r.failWrites.Store(on) }

// Restart starts serving again on the same port with the same data. The port may have been
// taken in between; the test then fails.
func (r *Registry) Restart() {
	r.t.Helper()
	r.Stop()
	var ln net.Listener
	var err error
	// The closed listener's port is normally free at once; allow a moment.
	for i := 0; i < 50; i++ {
		if ln, err = net.Listen("tcp", r.Endpoint); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		r.t.Fatalf("restarting the registry on %s: %v", r.Endpoint, err)
	}
	r.serve(ln)
}
