// Package registry runs an OCI registry inside plinth-controller: the code of the registry:3
// image (github.com/distribution/distribution/v3) used as a library, listening on
// localhost:<port> and storing blobs and manifests on the filesystem, where they survive
// restarts. Several registries may run in one process.
//
// Reads are anonymous; writes need the registry's credential (pkg/oci/registryauth), a token
// kept in its data directory that only plinth-controller's user can read and that this
// process's registry clients find in registryauth.Local while the registry runs.
//
// It builds the registry with handlers.NewApp behind its own listeners and http.Server rather
// than with distribution's registry.NewRegistry, which listens itself, replaces logrus's
// global level and the OpenTelemetry provider, and panics on a second call in one process.
package registry

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/distribution/distribution/v3/configuration"
	"github.com/distribution/distribution/v3/registry/handlers"
	// Registers the filesystem storage driver: without it NewApp panics "StorageDriver not
	// registered".
	_ "github.com/distribution/distribution/v3/registry/storage/driver/filesystem"
	"k8s.io/klog/v2"

	"github.com/plinth-dev/plinth/pkg/oci/registryauth"
)

// ErrPortInUse is wrapped by Start's error when another process (or another registry) listens
// on the endpoint's port.
var ErrPortInUse = errors.New("port in use")

// Config says where a registry listens and keeps its data.
type Config struct {
	// Endpoint is where the registry listens and clients reach it: localhost:<port>. The
	// registry listens on 127.0.0.1 and, when the host has it, on ::1, so that clients that
	// resolve localhost to either reach it.
	Endpoint string
	// DataDir is the absolute directory of the registry's blobs and manifests; Start creates it
	// when missing.
	DataDir string
}

// Server is one registry. It is used once: New, Start, Stop; a registry started again on the
// same DataDir is a new Server and serves the same data.
type Server struct {
	cfg    Config
	port   int
	app    *handlers.App
	client *http.Client

	mu sync.Mutex
	// cred is the write credential, loaded (or created) by Start.
	cred     registryauth.Credential
	srv      *http.Server
	started  bool
	stopped  bool
	serveErr error
	serving  sync.WaitGroup
}

// New validates cfg and builds the registry; it listens on nothing and writes nothing yet.
func New(cfg Config) (*Server, error) {
	port, err := parseEndpoint(cfg.Endpoint)
	if err != nil {
		return nil, err
	}
	if cfg.DataDir == "" || !filepath.IsAbs(cfg.DataDir) {
		return nil, fmt.Errorf("the data directory %q is not an absolute path", cfg.DataDir)
	}
	cfg.DataDir = filepath.Clean(cfg.DataDir)
	routeLogsToKlog()
	config, err := configFor(cfg)
	if err != nil {
		return nil, err
	}
	app, err := newApp(withInstanceID(cfg.Endpoint), config)
	if err != nil {
		return nil, err
	}
	return &Server{
		cfg: cfg, port: port, app: app,
		// No proxy: the registry is on this host, and a proxy from the environment would not
		// reach its loopback address. No keep-alive: probes are seconds apart.
		client: &http.Client{Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}},
	}, nil
}

// parseEndpoint checks that endpoint is localhost:<port> and returns the port.
func parseEndpoint(endpoint string) (int, error) {
	host, p, err := net.SplitHostPort(endpoint)
	if err != nil || host != "localhost" {
		return 0, fmt.Errorf("the endpoint %q is not localhost:<port>", endpoint)
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < 1 || port > 65535 {
		return 0, fmt.Errorf("the endpoint %q has no port between 1 and 65535", endpoint)
	}
	return port, nil
}

// withInstanceID returns a context whose "instance.id" is the endpoint: distribution's loggers
// add that value to every line (they read this plain string key, hence no key type of our
// own), which tells the registries of one process apart in the logs.
func withInstanceID(endpoint string) context.Context {
	return context.WithValue(context.Background(), "instance.id", endpoint)
}

// configFor is registry:3's configuration for one registry: filesystem storage in
// cfg.DataDir, deletes enabled, no background upload purging.
func configFor(cfg Config) (*configuration.Configuration, error) {
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return nil, err
	}
	config := &configuration.Configuration{
		Storage: configuration.Storage{
			"filesystem": configuration.Parameters{"rootdirectory": cfg.DataDir},
			// Tags are deleted for OCIRegistry retention and when an OCIArtifact is deleted.
			"delete": configuration.Parameters{"enabled": true},
			// registry:3's own default configuration caches blob descriptors in memory.
			"cache": configuration.Parameters{"blobdescriptor": "inmemory"},
			// The purger deletes unfinished uploads older than a week from a goroutine that
			// outlives Stop; an upload interrupted by a restart is retried by its client anyway.
			"maintenance": configuration.Parameters{"uploadpurging": map[any]any{"enabled": false}},
		},
	}
	// The secret signs upload state between the requests of one upload; one registry process
	// behind no load balancer needs no shared value, only one that is not empty (an empty one
	// is generated with a warning).
	config.HTTP.Secret = hex.EncodeToString(secret)
	// Access logging is distribution's registry.NewRegistry's, which is not used; said anyway
	// so that the configuration reads as what runs.
	config.Log.AccessLog.Disabled = true
	return config, nil
}

// newApp builds distribution's application, the http.Handler of the registry API. NewApp
// panics on a configuration it refuses: the panic becomes an error.
func newApp(ctx context.Context, config *configuration.Configuration) (app *handlers.App, err error) {
	defer func() {
		if r := recover(); r != nil {
			app, err = nil, fmt.Errorf("the registry refused its configuration: %v", r)
		}
	}()
	return handlers.NewApp(ctx, config), nil
}

// Endpoint is the registry's endpoint, localhost:<port>.
func (s *Server) Endpoint() string { return s.cfg.Endpoint }

// DataDir is the directory of the registry's data.
func (s *Server) DataDir() string { return s.cfg.DataDir }

// Start creates the data directory, checks that it can be written, loads the write credential
// from it (creating one the first time), and listens on the endpoint's port on the loopback
// addresses. It returns once the registry listens (requests are answered from then on, and the
// credential is in registryauth.Local) or with an error that says why it cannot: the directory
// cannot be written, the disk is full, or the port is taken (wrapping ErrPortInUse).
func (s *Server) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return fmt.Errorf("the registry on %s was started already", s.cfg.Endpoint)
	}
	if err := makeDir(s.cfg.DataDir); err != nil {
		return err
	}
	if err := s.CheckStorage(); err != nil {
		return err
	}
	cred, err := registryauth.LoadOrCreate(s.cfg.DataDir)
	if err != nil {
		return storageError(s.cfg.DataDir, err)
	}
	listeners, err := listenLoopback(ctx, s.port)
	if err != nil {
		return err
	}
	s.started, s.cred = true, cred
	registryauth.Local.Set(s.cfg.Endpoint, cred)
	s.srv = &http.Server{
		Handler:           writeGate(s.app, cred),
		ReadHeaderTimeout: 30 * time.Second,
		ErrorLog:          klog.NewStandardLogger("WARNING"),
		BaseContext:       func(net.Listener) context.Context { return withInstanceID(s.cfg.Endpoint) },
	}
	for _, l := range listeners {
		s.serving.Go(func() {
			if err := s.srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
				s.mu.Lock()
				s.serveErr = fmt.Errorf("the registry on %s stopped serving %s: %w", s.cfg.Endpoint, l.Addr(), err)
				s.mu.Unlock()
				// One address failing leaves clients of the other half served: close both, so
				// the failure shows as the registry down, not as a registry that answers some.
				_ = s.srv.Close()
			}
		})
	}
	klog.V(2).InfoS("Registry listening", "endpoint", s.cfg.Endpoint, "addresses", len(listeners), "dataDir", s.cfg.DataDir)
	return nil
}

// listenLoopback listens on port on 127.0.0.1 and, when the host has the address, on ::1.
func listenLoopback(ctx context.Context, port int) ([]net.Listener, error) {
	var lc net.ListenConfig
	v4, err := lc.Listen(ctx, "tcp4", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return nil, listenError(port, err)
	}
	v6, err := lc.Listen(ctx, "tcp6", net.JoinHostPort("::1", strconv.Itoa(port)))
	switch {
	case err == nil:
		return []net.Listener{v4, v6}, nil
	case errors.Is(err, syscall.EADDRNOTAVAIL) || errors.Is(err, syscall.EAFNOSUPPORT) || errors.Is(err, syscall.EPROTONOSUPPORT):
		// No IPv6 loopback on this host: nothing resolves localhost to ::1 either.
		return []net.Listener{v4}, nil
	default:
		_ = v4.Close()
		return nil, listenError(port, err)
	}
}

func listenError(port int, err error) error {
	if errors.Is(err, syscall.EADDRINUSE) {
		return fmt.Errorf("%w: port %d on localhost is already in use", ErrPortInUse, port)
	}
	return fmt.Errorf("cannot listen on port %d on localhost: %w", port, err)
}

// Ready asks the registry's /v2/ once and returns nil when it answers 200 OK.
func (s *Server) Ready(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+s.cfg.Endpoint+"/v2/", nil)
	if err != nil {
		return err
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return fmt.Errorf("the registry on %s does not answer: %w", s.cfg.Endpoint, cause(err))
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("the registry on %s answers /v2/ with %s", s.cfg.Endpoint, resp.Status)
	}
	return nil
}

// cause is the innermost error of a failed request; the URL is in the caller's message.
func cause(err error) error {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err
		}
		var opErr *net.OpError
		if errors.As(err, &opErr) {
			return opErr.Err
		}
		err = next
	}
}

// Err returns why the registry stopped serving on its own, or nil while it serves (and after
// Stop).
func (s *Server) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.serveErr
}

// Stop closes the listeners, waits until requests in progress end or ctx ends (then closes
// their connections), and releases the registry. Its data stays. Stopping twice, or a server
// never started, is fine.
func (s *Server) Stop(ctx context.Context) error {
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return nil
	}
	s.stopped = true
	srv := s.srv
	if s.started {
		registryauth.Local.Delete(s.cfg.Endpoint, s.cred)
	}
	s.mu.Unlock()
	if srv != nil {
		if err := srv.Shutdown(ctx); err != nil {
			klog.V(2).InfoS("Registry stopped before its requests ended", "endpoint", s.cfg.Endpoint, "err", err)
			_ = srv.Close()
		}
		s.serving.Wait()
	}
	return s.app.Shutdown()
}
