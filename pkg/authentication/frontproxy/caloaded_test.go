package frontproxy

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testingclock "k8s.io/utils/clock/testing"
)

// A relayed request that arrives before the front proxy's CA is loaded is told to come back,
// not run as system:anonymous; once the CA is there, it goes through; a request without a
// certificate or without a user header is never held.
func TestRequestsWaitForTheFrontProxyCA(t *testing.T) {
	ca := newCA(t, time.Now().Add(time.Hour))
	cert := ca.client(t, "front-proxy-client", time.Now().Add(time.Hour))
	bundle := &swappableCA{}
	served := 0
	h := WithCALoaded(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { served++ }), requestHeaderConfig(bundle))

	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, proxied(cert, "alice"))
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") != "1" || served != 0 {
		t.Fatalf("before the CA: code %d, Retry-After %q, served %d; want 503, 1, 0", rec.Code, rec.Header().Get("Retry-After"), served)
	}
	var status metav1.Status
	if err := json.Unmarshal(rec.Body.Bytes(), &status); err != nil || status.Kind != "Status" || status.Reason != metav1.StatusReasonServiceUnavailable || status.Message == "" {
		t.Errorf("before the CA: body %s (%v), want a ServiceUnavailable Status with a message", rec.Body, err)
	}

	for name, req := range map[string]*http.Request{
		"no certificate": proxied(nil, "alice"),
		"no user header": proxied(cert, ""),
	} {
		served = 0
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if served != 1 {
			t.Errorf("%s before the CA: held (%d), want it passed to the chain", name, rec.Code)
		}
	}

	bundle.set(ca)
	served = 0
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, proxied(cert, "alice"))
	if served != 1 || rec.Code != http.StatusOK {
		t.Errorf("after the CA: code %d, served %d; want it passed to the chain", rec.Code, served)
	}
}

// Without a request-header configuration (standalone) nothing is held.
func TestWithoutRequestHeaderConfigNothingIsHeld(t *testing.T) {
	ca := newCA(t, time.Now().Add(time.Hour))
	served := 0
	h := WithCALoaded(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { served++ }), nil)
	h.ServeHTTP(httptest.NewRecorder(), proxied(ca.client(t, "front-proxy-client", time.Now().Add(time.Hour)), "alice"))
	if served != 1 {
		t.Errorf("a relayed request without a request-header configuration was held")
	}
}

// A CA that never loads (broken content) does not hold requests forever: after maxHold they go
// to the authenticators, which refuse them as before.
func TestRequestsAreHeldAtMostMaxHold(t *testing.T) {
	ca := newCA(t, time.Now().Add(time.Hour))
	cert := ca.client(t, "front-proxy-client", time.Now().Add(time.Hour))
	clk := testingclock.NewFakePassiveClock(time.Now())
	served := 0
	h := withCALoaded(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { served++ }), requestHeaderConfig(&swappableCA{}), clk)
	h.ServeHTTP(httptest.NewRecorder(), proxied(cert, "alice"))
	if served != 0 {
		t.Fatal("held no request right after start")
	}
	clk.SetTime(clk.Now().Add(maxHold))
	h.ServeHTTP(httptest.NewRecorder(), proxied(cert, "alice"))
	if served != 1 {
		t.Errorf("still held %s after start", maxHold)
	}
}
