package frontproxy

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net/http"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/authenticatorfactory"
	"k8s.io/apiserver/pkg/authentication/request/headerrequest"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	testingclock "k8s.io/utils/clock/testing"
)

// testCA signs certificates for the tests.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

var serial atomic.Int64

func newCA(t testing.TB, notAfter time.Time) *testCA {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(serial.Add(1)),
		Subject:               pkix.Name{CommonName: "front-proxy-ca"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              notAfter,
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	cert := sign(t, tmpl, tmpl, &key.PublicKey, key)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &testCA{cert: cert, key: key, pool: pool}
}

// client issues a client certificate for commonName, valid until notAfter.
func (ca *testCA) client(t testing.TB, commonName string, notAfter time.Time) *x509.Certificate {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial.Add(1)),
		Subject:      pkix.Name{CommonName: commonName},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	return sign(t, tmpl, ca.cert, &key.PublicKey, ca.key)
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func sign(t testing.TB, tmpl, parent *x509.Certificate, pub *ecdsa.PublicKey, signer *ecdsa.PrivateKey) *x509.Certificate {
	t.Helper()
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, pub, signer)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

// swappableCA is a CA bundle whose content can be replaced, as a reloaded file or ConfigMap is.
type swappableCA struct{ pool atomic.Pointer[x509.CertPool] }

func (s *swappableCA) Name() string                             { return "test-front-proxy-ca" }
func (s *swappableCA) CurrentCABundleContent() []byte           { return nil }
func (s *swappableCA) AddListener(dynamiccertificates.Listener) {}
func (s *swappableCA) set(ca *testCA)                           { s.pool.Store(ca.pool) }
func (s *swappableCA) VerifyOptions() (x509.VerifyOptions, bool) {
	pool := s.pool.Load()
	if pool == nil {
		return x509.VerifyOptions{}, false
	}
	return x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}, true
}

func requestHeaderConfig(ca *swappableCA, allowed ...string) *authenticatorfactory.RequestHeaderConfig {
	return &authenticatorfactory.RequestHeaderConfig{
		UsernameHeaders:     headerrequest.StaticStringSlice{"X-Remote-User"},
		UIDHeaders:          headerrequest.StaticStringSlice{"X-Remote-Uid"},
		GroupHeaders:        headerrequest.StaticStringSlice{"X-Remote-Group"},
		ExtraHeaderPrefixes: headerrequest.StaticStringSlice{"X-Remote-Extra-"},
		CAContentProvider:   ca,
		AllowedClientNames:  headerrequest.StaticStringSlice(allowed),
	}
}

// recordingNext stands in for the library's authenticator chain and records that it was asked.
type recordingNext struct{ calls int }

func (r *recordingNext) AuthenticateRequest(*http.Request) (*authenticator.Response, bool, error) {
	r.calls++
	return &authenticator.Response{User: &user.DefaultInfo{Name: "from-next"}}, true, nil
}

func proxied(cert *x509.Certificate, userName string, groups ...string) *http.Request {
	req, _ := http.NewRequest(http.MethodGet, "https://plinth/apis", nil)
	if cert != nil {
		req.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{cert}}
	}
	if userName != "" {
		req.Header.Set("X-Remote-User", userName)
	}
	for _, g := range groups {
		req.Header.Add("X-Remote-Group", g)
	}
	req.Header.Set("X-Remote-Extra-Scopes", "read")
	return req
}

func TestProxyChainIsVerifiedOnceAndRemembered(t *testing.T) {
	ca := newCA(t, time.Now().Add(24*time.Hour))
	bundle := &swappableCA{}
	bundle.set(ca)
	next := &recordingNext{}
	a, auth := newWithClock(requestHeaderConfig(bundle, "front-proxy-client"), next, testingclock.NewFakeClock(time.Now()))
	proxyCert := ca.client(t, "front-proxy-client", time.Now().Add(time.Hour))

	for i := range 3 {
		resp, ok, err := auth.AuthenticateRequest(proxied(proxyCert, "alice", "team-a"))
		if err != nil || !ok {
			t.Fatalf("request %d: ok=%v err=%v", i, ok, err)
		}
		u := resp.User
		if u.GetName() != "alice" || !slices.Equal(u.GetGroups(), []string{"team-a", user.AllAuthenticated}) {
			t.Fatalf("request %d: user %q groups %v", i, u.GetName(), u.GetGroups())
		}
		if got := u.GetExtra()["scopes"]; !slices.Equal(got, []string{"read"}) {
			t.Fatalf("request %d: extra scopes %v", i, got)
		}
	}
	if next.calls != 0 {
		t.Errorf("the library chain was asked %d times for verified proxy requests", next.calls)
	}
	if got := a.signatureChecks.Load(); got != 1 {
		t.Errorf("signature checks: got %d, want 1 for three requests on one chain", got)
	}
}

func TestRequestsItCannotAcceptGoToTheLibraryChain(t *testing.T) {
	ca := newCA(t, time.Now().Add(24*time.Hour))
	other := newCA(t, time.Now().Add(24*time.Hour))
	now := time.Now()
	cases := []struct {
		name string
		req  *http.Request
	}{
		{"no client certificate", proxied(nil, "alice")},
		{"certificate from another CA", proxied(other.client(t, "front-proxy-client", now.Add(time.Hour)), "alice")},
		{"proxy name not allowed", proxied(ca.client(t, "someone-else", now.Add(time.Hour)), "alice")},
		{"no user header (a plain client certificate)", proxied(ca.client(t, "front-proxy-client", now.Add(time.Hour)), "")},
		{"expired certificate", proxied(ca.client(t, "front-proxy-client", now.Add(-time.Minute)), "alice")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			bundle := &swappableCA{}
			bundle.set(ca)
			next := &recordingNext{}
			_, auth := newWithClock(requestHeaderConfig(bundle, "front-proxy-client"), next, testingclock.NewFakeClock(now))
			resp, ok, err := auth.AuthenticateRequest(tc.req)
			if err != nil || !ok || resp.User.GetName() != "from-next" || next.calls != 1 {
				t.Fatalf("want the library chain to decide: user=%v ok=%v err=%v calls=%d", resp, ok, err, next.calls)
			}
		})
	}

	t.Run("no CA bundle loaded yet", func(t *testing.T) {
		next := &recordingNext{}
		_, auth := newWithClock(requestHeaderConfig(&swappableCA{}), next, testingclock.NewFakeClock(now))
		if _, _, _ = auth.AuthenticateRequest(proxied(ca.client(t, "front-proxy-client", now.Add(time.Hour)), "alice")); next.calls != 1 {
			t.Fatalf("library chain asked %d times, want 1", next.calls)
		}
	})

	t.Run("empty allowed names accept any proxy name", func(t *testing.T) {
		bundle := &swappableCA{}
		bundle.set(ca)
		next := &recordingNext{}
		_, auth := newWithClock(requestHeaderConfig(bundle), next, testingclock.NewFakeClock(now))
		resp, ok, err := auth.AuthenticateRequest(proxied(ca.client(t, "any-proxy", now.Add(time.Hour)), "alice"))
		if err != nil || !ok || resp.User.GetName() != "alice" || next.calls != 0 {
			t.Fatalf("user=%v ok=%v err=%v calls=%d", resp, ok, err, next.calls)
		}
	})
}

func TestRememberedChainIsForgottenWhenTheCABundleChanges(t *testing.T) {
	oldCA := newCA(t, time.Now().Add(24*time.Hour))
	bundle := &swappableCA{}
	bundle.set(oldCA)
	next := &recordingNext{}
	a, auth := newWithClock(requestHeaderConfig(bundle, "front-proxy-client"), next, testingclock.NewFakeClock(time.Now()))
	proxyCert := oldCA.client(t, "front-proxy-client", time.Now().Add(time.Hour))
	if resp, ok, _ := auth.AuthenticateRequest(proxied(proxyCert, "alice")); !ok || resp.User.GetName() != "alice" {
		t.Fatalf("first request not accepted: %v", resp)
	}

	bundle.set(newCA(t, time.Now().Add(24*time.Hour)))
	if resp, _, _ := auth.AuthenticateRequest(proxied(proxyCert, "alice")); resp.User.GetName() != "from-next" || next.calls != 1 {
		t.Fatalf("a chain from the replaced CA was still accepted: %v", resp.User.GetName())
	}
	if got := a.signatureChecks.Load(); got != 2 {
		t.Errorf("signature checks: got %d, want 2 (the reload forces a new check)", got)
	}
}

func TestRememberedChainExpiresWithItsCertificates(t *testing.T) {
	start := time.Now()
	// The CA expires before the proxy certificate: the chain is only as good as its shortest link.
	ca := newCA(t, start.Add(2*time.Hour))
	bundle := &swappableCA{}
	bundle.set(ca)
	next := &recordingNext{}
	clk := testingclock.NewFakeClock(start)
	_, auth := newWithClock(requestHeaderConfig(bundle, "front-proxy-client"), next, clk)
	proxyCert := ca.client(t, "front-proxy-client", start.Add(3*time.Hour))

	if resp, ok, _ := auth.AuthenticateRequest(proxied(proxyCert, "alice")); !ok || resp.User.GetName() != "alice" {
		t.Fatalf("first request not accepted: %v", resp)
	}
	clk.SetTime(start.Add(90 * time.Minute))
	if resp, _, _ := auth.AuthenticateRequest(proxied(proxyCert, "alice")); resp.User.GetName() != "alice" {
		t.Fatalf("request inside the window not accepted: %v", resp.User.GetName())
	}
	clk.SetTime(start.Add(2*time.Hour + time.Second))
	if resp, _, _ := auth.AuthenticateRequest(proxied(proxyCert, "alice")); resp.User.GetName() != "from-next" {
		t.Fatalf("request after the CA expired was accepted from memory")
	}
}

// BenchmarkProxyAuthentication compares the library's request-header authenticator, which
// verifies the chain on every request, with the remembering one, on the same ECDSA chain.
func BenchmarkProxyAuthentication(b *testing.B) {
	ca := newCA(b, time.Now().Add(24*time.Hour))
	bundle := &swappableCA{}
	bundle.set(ca)
	cfg := requestHeaderConfig(bundle, "front-proxy-client")
	proxyCert := ca.client(b, "front-proxy-client", time.Now().Add(time.Hour))
	library := headerrequest.NewDynamicVerifyOptionsSecure(cfg.CAContentProvider.VerifyOptions, cfg.AllowedClientNames,
		cfg.UsernameHeaders, cfg.UIDHeaders, cfg.GroupHeaders, cfg.ExtraHeaderPrefixes)
	for _, bc := range []struct {
		name string
		auth authenticator.Request
	}{
		{"library", library},
		{"remembered", New(cfg, &recordingNext{})},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, ok, err := bc.auth.AuthenticateRequest(proxied(proxyCert, "alice", "team-a")); !ok || err != nil {
					b.Fatalf("ok=%v err=%v", ok, err)
				}
			}
		})
	}
}
