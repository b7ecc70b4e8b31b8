package integration

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/internal/localplatform"
	"github.com/plinth-dev/plinth/pkg/pki"
)

// checkForgedFrontProxyHeaders sends plinth-apiserver, directly, a request for what only a
// platform admin may list (team-a's ResourceBindings) with front-proxy headers naming dana in
// platform:admins and system:masters, over connections presenting each kind of client
// certificate. Only the front proxy's own certificate makes the headers count; with any other
// the request is its certificate's user, or anonymous, or refused.
func checkForgedFrontProxyHeaders(t *testing.T, p *localplatform.Platform) {
	pkiDir, tmp := p.PKIDir(), t.TempDir()
	load := func(pair pki.Pair) []tls.Certificate {
		cert, err := tls.LoadX509KeyPair(pair.Cert, pair.Key)
		if err != nil {
			t.Fatal(err)
		}
		return []tls.Certificate{cert}
	}
	issue := func(ca pki.Pair, caName, name, user string) []tls.Certificate {
		authority, err := pki.LoadOrCreateCA(ca, caName)
		if err != nil {
			t.Fatal(err)
		}
		pair := pki.PairIn(tmp, name)
		if err := authority.EnsureClient(pair, user); err != nil {
			t.Fatal(err)
		}
		return load(pair)
	}
	caPEM, err := os.ReadFile(filepath.Join(pkiDir, "plinth-ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	send := func(certs []tls.Certificate) (int, string, error) {
		config := &tls.Config{RootCAs: pool}
		if len(certs) > 0 {
			// Always present the certificate: by default Go's client sends none that the
			// server's list of acceptable CAs does not name, and the server would never see it.
			config.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &certs[0], nil }
		}
		client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: config}}
		req, _ := http.NewRequest(http.MethodGet, p.PlinthURL()+"/apis/score.dev/v1b1/namespaces/team-a/resourcebindings", nil)
		req.Header.Set("X-Remote-User", "dana")
		req.Header["X-Remote-Group"] = []string{"platform:admins", "system:masters"}
		resp, err := client.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body), nil
	}
	for _, c := range []struct {
		name  string
		certs []tls.Certificate
		// as is the user the request must be taken for; empty: refused before authorization
		// (401, or the TLS handshake).
		as string
	}{
		{"no client certificate", nil, "system:anonymous"},
		{"alice's certificate (cluster CA)", load(pki.PairIn(pkiDir, "alice")), "alice"},
		{"a cluster-CA certificate named front-proxy-client", issue(pki.PairIn(pkiDir, "ca"), "plinth-local-cluster-ca", "cluster-ca-front-proxy", "front-proxy-client"), "front-proxy-client"},
		{"a front-proxy-CA certificate with a name not allowed", issue(pki.PairIn(pkiDir, "front-proxy-ca"), "plinth-local-front-proxy-ca", "mallory", "mallory"), ""},
		{"an unknown CA's certificate named front-proxy-client", issue(pki.PairIn(tmp, "rogue-ca"), "rogue-ca", "rogue-front-proxy", "front-proxy-client"), ""},
	} {
		code, body, err := send(c.certs)
		switch {
		case strings.Contains(body, "dana"):
			t.Errorf("%s: the forged headers were believed: %d %.300s", c.name, code, body)
		case c.as != "" && (err != nil || code != http.StatusForbidden || !strings.Contains(body, `User \"`+c.as+`\"`)):
			t.Errorf("%s: %d %.300s %v, want 403 for %s", c.name, code, body, err, c.as)
		case c.as == "" && err == nil && code != http.StatusUnauthorized:
			t.Errorf("%s: %d %.300s, want 401", c.name, code, body)
		}
	}
	// The front proxy's own certificate: the headers count (so the cases above would have
	// noticed them being believed).
	if code, body, err := send(load(pki.PairIn(pkiDir, "front-proxy-client"))); err != nil || code != http.StatusOK {
		t.Errorf("the front proxy's certificate with dana's headers: %d %.300s %v", code, body, err)
	}
}
