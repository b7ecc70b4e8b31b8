package frontproxy

import (
	"encoding/json"
	"net/http"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/authenticatorfactory"
	"k8s.io/utils/clock"
)

// retryAfterSeconds is how long a client waits before asking again while the CA is loading;
// it loads within a few seconds of the server's start.
const retryAfterSeconds = "1"

// maxHold bounds how long after start requests are held. A CA that is still not loaded by then
// will not load by itself (broken PEM in the ConfigMap, an informer that is refused): requests
// then go to the authenticators as before, which refuse them, rather than "retry shortly"
// forever.
const maxHold = 60 * time.Second

// WithCALoaded answers 503 with Retry-After to a request that comes with a client certificate
// and a front-proxy user header while the front proxy's CA bundle is not loaded yet.
//
// Why: k8s.io/apiserver reads that bundle from kube-system/extension-apiserver-authentication
// through an informer that starts with the server, so for a second or two after a start the
// server listens without it. A request the aggregator relays then verifies against no CA, no
// authenticator claims it, and it runs as system:anonymous: a 403 naming the wrong user, which
// a client takes as final (the fault suite saw one to three per plinth-apiserver restart). A
// 503 with Retry-After is what it is — the server is not ready — and client-go retries it.
// Requests without front-proxy headers are left to the chain as they are, and so is everything
// once maxHold has passed since the handler was built (the server's start).
func WithCALoaded(handler http.Handler, config *authenticatorfactory.RequestHeaderConfig) http.Handler {
	return withCALoaded(handler, config, clock.RealClock{})
}

func withCALoaded(handler http.Handler, config *authenticatorfactory.RequestHeaderConfig, clk clock.PassiveClock) http.Handler {
	if config == nil || config.CAContentProvider == nil {
		return handler
	}
	until := clk.Now().Add(maxHold)
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.TLS != nil && len(req.TLS.PeerCertificates) > 0 && hasUserHeader(req, config) {
			if _, loaded := config.CAContentProvider.VerifyOptions(); !loaded && clk.Now().Before(until) {
				notReady(w)
				return
			}
		}
		handler.ServeHTTP(w, req)
	})
}

// hasUserHeader reports whether the request names a user in one of the front proxy's headers.
func hasUserHeader(req *http.Request, config *authenticatorfactory.RequestHeaderConfig) bool {
	if config.UsernameHeaders == nil {
		return false
	}
	for _, h := range config.UsernameHeaders.Value() {
		if req.Header.Get(h) != "" {
			return true
		}
	}
	return false
}

// notReady writes a 503 Status with Retry-After.
func notReady(w http.ResponseWriter) {
	status := apierrors.NewServiceUnavailable("The server is still loading the front proxy's certificate authority; retry shortly.").ErrStatus
	status.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Status"}
	status.Details = &metav1.StatusDetails{RetryAfterSeconds: 1}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Retry-After", retryAfterSeconds)
	w.WriteHeader(http.StatusServiceUnavailable)
	_ = json.NewEncoder(w).Encode(status)
}
