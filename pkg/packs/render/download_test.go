package render

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// elsewhere is a plain-HTTP server that every connection the Renderer opens to
// charts.example.com:80 reaches, as a real host would: it serves files by path and counts the
// requests it gets.
type elsewhere struct {
	srv      *httptest.Server
	requests atomic.Int64
}

const elsewhereHost = "charts.example.com"

func startElsewhere(t *testing.T, r *Renderer, files map[string][]byte) *elsewhere {
	t.Helper()
	e := &elsewhere{}
	e.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		e.requests.Add(1)
		data, ok := files[req.URL.Path]
		if !ok {
			http.NotFound(w, req)
			return
		}
		_, _ = w.Write(data)
	}))
	t.Cleanup(e.srv.Close)
	var d net.Dialer
	r.transport.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if addr == elsewhereHost+":80" {
			addr = e.srv.Listener.Addr().String()
		}
		return d.DialContext(ctx, network, addr)
	}
	return e
}

// pointAt makes the index's only entry of chart web download from u; r.mu is held.
func (r *chartRepo) pointAt(u string) {
	r.index.Entries["web"][0].URLs = []string{u}
}

// TestDownloadsStayOnHTTPS checks that a chart named by an https repository is downloaded over
// https only: an archive URL the index gives and a redirect must not take the download to
// plain HTTP, not even to a loopback host (which the chart URL itself may name), while https
// redirects and plain-HTTP repositories still work.
func TestDownloadsStayOnHTTPS(t *testing.T) {
	const archivePath = "/charts/web-1.0.0.tgz"
	for _, tc := range []struct {
		name string
		// tls says whether the repository is https.
		tls   bool
		setup func(repo *chartRepo, plain *elsewhere)
		// refused is a piece of the refusal; empty means the render succeeds.
		refused string
	}{
		{
			name: "the index lists an http archive", tls: true,
			setup:   func(repo *chartRepo, _ *elsewhere) { repo.pointAt("http://" + elsewhereHost + archivePath) },
			refused: "is downloaded from " + elsewhereHost + ", not over https",
		},
		{
			name: "the index lists an http archive on a loopback host", tls: true,
			setup:   func(repo *chartRepo, plain *elsewhere) { repo.pointAt(plain.srv.URL + archivePath) },
			refused: "not over https",
		},
		{
			name: "the archive redirects to http", tls: true,
			setup: func(repo *chartRepo, _ *elsewhere) {
				repo.redirects[archivePath] = "http://" + elsewhereHost + archivePath
			},
			refused: "redirected to " + elsewhereHost + ", not over https",
		},
		{
			name: "the index redirects to http on a loopback host", tls: true,
			setup:   func(repo *chartRepo, plain *elsewhere) { repo.redirects["/index.yaml"] = plain.srv.URL + "/index.yaml" },
			refused: "not over https",
		},
		{
			name: "the archive redirects to https", tls: true,
			setup: func(repo *chartRepo, _ *elsewhere) {
				repo.archives["/mirror/web-1.0.0.tgz"] = repo.archives[archivePath]
				repo.redirects[archivePath] = repo.srv.URL + "/mirror/web-1.0.0.tgz"
			},
		},
		{
			name: "a plain-HTTP repository lists an absolute http archive on its host", tls: false,
			setup: func(repo *chartRepo, _ *elsewhere) { repo.pointAt(repo.srv.URL + archivePath) },
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo := startRepoTLS(t, tc.tls, webChart("1.0.0"))
			r := New()
			// The same archive, and an index, served over plain HTTP elsewhere: what a download
			// that left https would get.
			plain := startElsewhere(t, r, map[string][]byte{archivePath: repo.archives[archivePath], "/index.yaml": mustIndex(t, repo)})
			repo.mu.Lock()
			tc.setup(repo, plain)
			repo.mu.Unlock()
			_, err := r.Render(context.Background(), Source{Chart: repo.chartOf("web", "1.0.0")}, opts)
			if tc.refused == "" {
				if err != nil {
					t.Fatalf("render: %v", err)
				}
				return
			}
			if e := contentError(t, err); !strings.Contains(e.Message, tc.refused) {
				t.Errorf("refused with %q, want %q", e.Message, tc.refused)
			}
			if n := plain.requests.Load(); n > 0 {
				t.Errorf("%d requests went over plain HTTP", n)
			}
		})
	}
}

// mustIndex is the repository's index as it serves it.
func mustIndex(t *testing.T, repo *chartRepo) []byte {
	t.Helper()
	rec := httptest.NewRecorder()
	repo.serve(rec, httptest.NewRequest(http.MethodGet, "/index.yaml", nil))
	return rec.Body.Bytes()
}

// TestDownloadErrorsQuoteNoURL checks that a failed download names hosts, never the URL: an
// index's archive URL and a redirect's target may carry a token (user:token@, ?token=, a signed
// URL), and the error becomes a status message and a log line. Each failure keeps its kind.
func TestDownloadErrorsQuoteNoURL(t *testing.T) {
	const (
		user   = "bot"
		secret = "tok3n"
		query  = "s3cret"
	)
	withToken := func(base, path string) string {
		scheme, host, _ := strings.Cut(base, "://")
		return scheme + "://" + user + ":" + secret + "@" + host + path + "?token=" + query
	}
	for _, tc := range []struct {
		name    string
		setup   func(repo *chartRepo) *Chart
		content bool
	}{
		{name: "the archive is not there", setup: func(repo *chartRepo) *Chart {
			repo.pointAt(withToken(repo.srv.URL, "/charts/missing.tgz"))
			return repo.chartOf("web", "1.0.0")
		}},
		{name: "the archive's host refuses connections", setup: func(repo *chartRepo) *Chart {
			repo.pointAt(withToken("https://127.0.0.1:1", "/web.tgz"))
			return repo.chartOf("web", "1.0.0")
		}},
		{name: "the archive is another", setup: func(repo *chartRepo) *Chart {
			repo.pointAt(withToken(repo.srv.URL, "/charts/web-1.0.0.tgz"))
			good := repo.archives["/charts/web-1.0.0.tgz"]
			repo.archives["/charts/web-1.0.0.tgz"] = good[:len(good)-1]
			return repo.chartOf("web", "1.0.0")
		}},
		{name: "the archive redirects to a host that refuses connections", setup: func(repo *chartRepo) *Chart {
			repo.redirects["/charts/web-1.0.0.tgz"] = withToken("https://127.0.0.1:1", "/gone.tgz")
			return repo.chartOf("web", "1.0.0")
		}},
		{name: "the archive redirects to http", content: true, setup: func(repo *chartRepo) *Chart {
			repo.redirects["/charts/web-1.0.0.tgz"] = withToken("http://"+elsewhereHost, "/web.tgz")
			return repo.chartOf("web", "1.0.0")
		}},
		{name: "the index lists an http archive", content: true, setup: func(repo *chartRepo) *Chart {
			repo.pointAt(withToken("http://"+elsewhereHost, "/web.tgz"))
			return repo.chartOf("web", "1.0.0")
		}},
		{name: "the repository URL has a token and is not there", setup: func(repo *chartRepo) *Chart {
			c := repo.chartOf("web", "1.0.0")
			c.URL = withToken(repo.srv.URL, "/")
			return c
		}},
		{name: "the repository URL has a token and is down", setup: func(repo *chartRepo) *Chart {
			repo.failing.Store(true)
			c := repo.chartOf("web", "1.0.0")
			c.URL = withToken(repo.srv.URL, "")
			return c
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo := startRepo(t, webChart("1.0.0"))
			repo.mu.Lock()
			c := tc.setup(repo)
			repo.mu.Unlock()
			_, err := New().Render(context.Background(), Source{Chart: c}, opts)
			if err == nil {
				t.Fatal("the render succeeded")
			}
			for _, s := range []string{user, secret, query} {
				if strings.Contains(err.Error(), s) {
					t.Errorf("the error quotes %q: %v", s, err)
				}
			}
			if IsContentError(err) != tc.content {
				t.Errorf("content error %v, want %v: %v", IsContentError(err), tc.content, err)
			}
			t.Log(err)
		})
	}
}

func TestRedactURLs(t *testing.T) {
	for in, want := range map[string]string{
		`Get "https://bot:tok3n@charts.example.com/x/web.tgz?token=s3cret": EOF`:    `Get "https://charts.example.com": EOF`,
		"GET https://objects.example.com:8443/a?X-Amz-Signature=abc: 403 Forbidden": "GET https://objects.example.com:8443: 403 Forbidden",
		"from http://charts.example.com/TOKEN/web.tgz.":                             "from http://charts.example.com.",
		"chart web is not in registry oci://bot:x@registry.example/charts?t=1":      "chart web is not in registry oci://registry.example/charts",
		"no URL here":                   "no URL here",
		"broken https://%zz/x?token=s3": "broken https://…",
	} {
		if got := RedactURLs(in); got != want {
			t.Errorf("RedactURLs(%q) = %q, want %q", in, got, want)
		}
	}
	// Redact keeps what errors.Is and IsContentError see.
	wrapped := Redact(&Error{Message: "chart web from https://bot:tok3n@charts.example.com/x"})
	if e := contentError(t, wrapped); e.Message != "chart web from https://charts.example.com" {
		t.Errorf("redacted content error: %q", e.Message)
	}
	cancelled := Redact(&redactedError{msg: "fetching https://x.example/?token=s3cret", err: context.Canceled})
	if !strings.Contains(cancelled.Error(), "https://x.example") || strings.Contains(cancelled.Error(), "s3cret") || !errors.Is(cancelled, context.Canceled) {
		t.Errorf("redacted cancellation: %v", cancelled)
	}
}
