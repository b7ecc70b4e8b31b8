// Package frontproxy authenticates requests relayed by the front proxy (kube-apiserver's
// aggregation layer) while remembering which proxy certificate chains it has verified.
//
// k8s.io/apiserver verifies the proxy's client certificate chain again on every request,
// although the aggregator sends everything over a few long-lived HTTP/2 connections whose
// certificate never changes. Under load that signature check was 16 % of plinth-apiserver's
// CPU (docs/benchmarks.md). This authenticator does the same checks as the library's
// request-header authenticator, but remembers a verified chain until the CA bundle changes or
// a certificate of the chain leaves its validity window, so the signature work happens once
// per chain instead of once per request.
//
// It only ever says yes for requests the library would also accept: anything it cannot
// accept itself (no certificate, a chain that does not verify, a proxy name that is not
// allowed, no user header) goes to the library's authenticator unchanged, which then
// decides and reports errors exactly as before.
package frontproxy

import (
	"crypto/sha256"
	"crypto/x509"
	"net/http"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/authenticatorfactory"
	"k8s.io/apiserver/pkg/authentication/group"
	"k8s.io/apiserver/pkg/authentication/request/headerrequest"
	"k8s.io/apiserver/pkg/authentication/request/union"
	"k8s.io/utils/clock"
)

// cacheSize bounds the number of remembered chains. A server sees one chain per front proxy
// (one per kube-apiserver replica, a few more during a certificate rotation), so this is
// generous; the least recently used chain is forgotten first.
const cacheSize = 256

// proxyAuthenticator accepts front-proxy requests whose certificate chain it has verified before,
// and hands every other request to the next authenticator.
type proxyAuthenticator struct {
	config   *authenticatorfactory.RequestHeaderConfig
	headers  authenticator.Request
	next     authenticator.Request
	verified *cache.LRUExpireCache
	clock    clock.PassiveClock

	// signatureChecks counts full chain verifications, so tests can see the cache work.
	signatureChecks atomic.Int64
}

// verifiedChain records a successful verification: against which CA pool, and from when the
// chain was valid (its expiry is the cache entry's own).
type verifiedChain struct {
	roots     *x509.CertPool
	notBefore time.Time
}

// New returns an authenticator that tries the front proxy first, with verified chains
// remembered, and falls back to next (the library's full authenticator chain).
func New(config *authenticatorfactory.RequestHeaderConfig, next authenticator.Request) authenticator.Request {
	_, chained := newWithClock(config, next, clock.RealClock{})
	return chained
}

func newWithClock(config *authenticatorfactory.RequestHeaderConfig, next authenticator.Request, clk clock.Clock) (*proxyAuthenticator, authenticator.Request) {
	a := &proxyAuthenticator{
		config:   config,
		headers:  headerrequest.NewDynamic(config.UsernameHeaders, config.UIDHeaders, config.GroupHeaders, config.ExtraHeaderPrefixes),
		next:     next,
		verified: cache.NewLRUExpireCacheWithClock(cacheSize, clk),
		clock:    clk,
	}
	// The library's chain adds system:authenticated to every user it accepts; so must this.
	// authenticateProxy never fails with an error, it only declines, so the union hands
	// every request it declines to next, which then decides and reports errors itself.
	return a, union.New(group.NewAuthenticatedGroupAdder(authenticator.RequestFunc(a.authenticateProxy)), next)
}

// authenticateProxy answers only for a verified proxy chain with a user header.
func (a *proxyAuthenticator) authenticateProxy(req *http.Request) (*authenticator.Response, bool, error) {
	if req.TLS == nil || len(req.TLS.PeerCertificates) == 0 {
		return nil, false, nil
	}
	opts, ok := a.config.CAContentProvider.VerifyOptions()
	if !ok {
		return nil, false, nil
	}
	chain := req.TLS.PeerCertificates
	if !a.verify(chain, opts) {
		return nil, false, nil
	}
	if !a.allowedName(chain[0].Subject.CommonName) {
		return nil, false, nil
	}
	return a.headers.AuthenticateRequest(req)
}

// verify reports whether chain verifies against opts, from memory when this chain was
// verified against the same CA pool and is still inside its validity window.
func (a *proxyAuthenticator) verify(chain []*x509.Certificate, opts x509.VerifyOptions) bool {
	now := a.clock.Now()
	key := chainKey(chain)
	if v, ok := a.verified.Get(key); ok {
		entry := v.(verifiedChain)
		// A reloaded CA bundle comes with a new pool; anything verified before is asked again.
		if entry.roots == opts.Roots && !now.Before(entry.notBefore) {
			return true
		}
	}

	opts.CurrentTime = now
	if opts.Intermediates == nil && len(chain) > 1 {
		opts.Intermediates = x509.NewCertPool()
		for _, intermediate := range chain[1:] {
			opts.Intermediates.AddCert(intermediate)
		}
	}
	a.signatureChecks.Add(1)
	chains, err := chain[0].Verify(opts)
	if err != nil || len(chains) == 0 {
		return false
	}
	notBefore, notAfter := window(chains[0])
	if ttl := notAfter.Sub(now); ttl > 0 {
		a.verified.Add(key, verifiedChain{roots: opts.Roots, notBefore: notBefore}, ttl)
	}
	return true
}

// allowedName applies the proxy's allowed common names; an empty list allows any.
func (a *proxyAuthenticator) allowedName(commonName string) bool {
	if a.config.AllowedClientNames == nil {
		return true
	}
	allowed := a.config.AllowedClientNames.Value()
	if len(allowed) == 0 {
		return true
	}
	for _, name := range allowed {
		if name == commonName {
			return true
		}
	}
	return false
}

// chainKey identifies the presented certificates by content, so that a different chain with
// the same leaf (other intermediates) is verified on its own.
func chainKey(chain []*x509.Certificate) [sha256.Size]byte {
	h := sha256.New()
	for _, c := range chain {
		h.Write(c.Raw)
	}
	var key [sha256.Size]byte
	h.Sum(key[:0])
	return key
}

// window is the time range in which every certificate of a verified chain, root included,
// is valid: the latest NotBefore and the earliest NotAfter.
func window(chain []*x509.Certificate) (notBefore, notAfter time.Time) {
	notBefore, notAfter = chain[0].NotBefore, chain[0].NotAfter
	for _, c := range chain[1:] {
		if c.NotBefore.After(notBefore) {
			notBefore = c.NotBefore
		}
		if c.NotAfter.Before(notAfter) {
			notAfter = c.NotAfter
		}
	}
	return notBefore, notAfter
}
