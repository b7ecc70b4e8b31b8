package render

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/Masterminds/semver/v3"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/registry"
	"helm.sh/helm/v3/pkg/repo"
	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/errcode"
	"sigs.k8s.io/yaml"
)

// Variables for the tests' sake.
var (
	// maxIndexBytes bounds a chart repository's index.yaml; the largest public ones are tens
	// of MiB.
	maxIndexBytes int64 = 64 << 20
	// maxChartBytes bounds a chart archive (Helm itself unpacks at most 100 MiB).
	maxChartBytes int64 = 32 << 20
)

// pulledChart is a chart loaded for one render.
type pulledChart struct {
	chart *chart.Chart
}

// pull fetches the chart c names, from the cache when this version was pulled before, and
// loads it. Its errors quote no URL: an index's download URLs and the URLs a server redirects
// to may carry tokens (signed URLs, user:token@), and the errors end up in status messages
// and logs; they name hosts instead, and Redact takes out what a library's message quotes.
func (r *Renderer) pull(ctx context.Context, c *Chart) (*pulledChart, error) {
	cached, err := r.fetch(ctx, c)
	if err != nil {
		return nil, Redact(err)
	}
	ch, err := loader.LoadFiles(cached.files)
	if err != nil {
		return nil, &Error{Message: fmt.Sprintf("chart %s is not a valid chart: %v", c.Name, err)}
	}
	return &pulledChart{chart: ch}, nil
}

// fetch gets the chart's files, from the cache or the chart's repository or registry.
func (r *Renderer) fetch(ctx context.Context, c *Chart) (*cachedChart, error) {
	if c.Name == "" || strings.ContainsAny(c.Name, "/:@") {
		return nil, &Error{Message: fmt.Sprintf("chart name %q is not a chart name", c.Name)}
	}
	u, err := url.Parse(c.URL)
	if err != nil || u.Host == "" {
		return nil, &Error{Message: "the chart URL is not a URL"}
	}
	switch u.Scheme {
	case "oci":
		return r.pullOCI(ctx, c, u)
	case "https":
		return r.pullRepo(ctx, c, u)
	case "http":
		if !r.plainHTTP(u.Host) {
			return nil, &Error{Message: fmt.Sprintf("the chart repository at %s is not https", u.Host)}
		}
		return r.pullRepo(ctx, c, u)
	}
	return nil, &Error{Message: fmt.Sprintf("the chart URL's scheme %q is neither https nor oci", u.Scheme)}
}

// secure says whether a chart download may go to u, an archive's URL from a repository index
// or a URL a server redirected to: over https always; over plain http only when the chart's
// own URL is plain HTTP (plain), and to a host reached over plain HTTP. A chart named by an
// https or registry URL is thus never downloaded in the clear, whatever the index says or
// the server answers.
func (r *Renderer) secure(u *url.URL, plain bool) bool {
	switch u.Scheme {
	case "https":
		return true
	case "http":
		return plain && r.plainHTTP(u.Host)
	}
	return false
}

// maxRedirects is the number of redirects a download follows, as net/http's default.
const maxRedirects = 10

// checkRedirect is an http.Client's CheckRedirect for a chart whose URL is plain HTTP, or not:
// a redirect may not leave https (see secure).
func (r *Renderer) checkRedirect(plain bool) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		if len(via) >= maxRedirects {
			return fmt.Errorf("stopped after %d redirects", maxRedirects)
		}
		if !r.secure(req.URL, plain) {
			return &Error{Message: fmt.Sprintf("a download of the chart was redirected to %s, not over https", req.URL.Host)}
		}
		return nil
	}
}

// exactVersion says whether a requested version names one version, so that a cached chart of
// that version can be used without reading the repository's index: Helm's index lookup takes
// an exact match of a full semantic version before treating it as a constraint.
func exactVersion(v string) bool {
	_, err := semver.StrictNewVersion(v)
	return err == nil
}

// pullRepo resolves the version in the index of the chart repository at u (https, or http on
// a plain-HTTP host) and downloads the chart. Helm's getter has no context and reports HTTP
// statuses only in text, so the requests are made here; the index and its version resolution
// are Helm's.
func (r *Renderer) pullRepo(ctx context.Context, c *Chart, u *url.URL) (*cachedChart, error) {
	base := strings.TrimSuffix(c.URL, "/")
	if exactVersion(c.Version) {
		if hit := r.cache.get(chartKey{base, c.Name, c.Version}); hit != nil {
			return hit, nil
		}
	}
	plain := u.Scheme == "http"
	client, done, err := r.httpClient(c.CABundle, plain)
	if err != nil {
		return nil, err
	}
	defer done()
	repository := "the chart repository at " + u.Host
	data, err := get(ctx, client, base+"/index.yaml", maxIndexBytes, "the index of "+repository)
	if err != nil {
		return nil, err
	}
	index, err := loadIndex(data)
	if err != nil {
		return nil, &Error{Message: fmt.Sprintf("the index of %s is not a chart repository index: %v", repository, err)}
	}
	cv, err := index.Get(c.Name, c.Version)
	switch {
	case errors.Is(err, repo.ErrNoChartName):
		return nil, &Error{Message: fmt.Sprintf("chart %s is not in %s", c.Name, repository)}
	case err != nil:
		return nil, &Error{Message: fmt.Sprintf("no version of chart %s in %s matches %q", c.Name, repository, c.Version)}
	case len(cv.URLs) == 0:
		return nil, &Error{Message: fmt.Sprintf("chart %s %s in %s has no download URL", c.Name, cv.Version, repository)}
	}
	key := chartKey{base, c.Name, cv.Version}
	if hit := r.cache.get(key); hit != nil {
		return hit, nil
	}
	archiveURL, err := repo.ResolveReferenceURL(base, cv.URLs[0])
	var archive *url.URL
	if err == nil {
		archive, err = url.Parse(archiveURL)
	}
	if err != nil || archive.Host == "" {
		return nil, &Error{Message: fmt.Sprintf("chart %s %s in %s has an invalid download URL", c.Name, cv.Version, repository)}
	}
	if !r.secure(archive, plain) {
		return nil, &Error{Message: fmt.Sprintf("chart %s %s in %s is downloaded from %s, not over https", c.Name, cv.Version, repository, archive.Host)}
	}
	what := fmt.Sprintf("chart %s %s from %s", c.Name, cv.Version, archive.Host)
	data, err = get(ctx, client, archiveURL, maxChartBytes, what)
	if err != nil {
		return nil, err
	}
	if cv.Digest != "" {
		// The index records the archive's sha256; a different download is a broken or changing
		// mirror, worth trying again.
		sum := sha256.Sum256(data)
		if !strings.EqualFold(strings.TrimPrefix(cv.Digest, "sha256:"), hex.EncodeToString(sum[:])) {
			return nil, fmt.Errorf("%s does not have the digest the index records", what)
		}
	}
	return r.unpack(key, data)
}

// loadIndex reads a repository index as Helm does: entries that are not valid chart versions
// are dropped, and every chart's versions are sorted newest first.
func loadIndex(data []byte) (*repo.IndexFile, error) {
	index := &repo.IndexFile{}
	if err := yaml.Unmarshal(data, index); err != nil {
		return nil, err
	}
	if index.APIVersion == "" {
		return nil, errors.New("it has no apiVersion")
	}
	for name, versions := range index.Entries {
		valid := versions[:0]
		for _, v := range versions {
			if v == nil || v.Metadata == nil {
				continue
			}
			if v.APIVersion == "" {
				v.APIVersion = chart.APIVersionV1
			}
			if v.Validate() == nil {
				valid = append(valid, v)
			}
		}
		index.Entries[name] = valid
	}
	index.SortEntries()
	return index, nil
}

// pullOCI resolves the version among the registry repository's tags (when it is a constraint)
// and pulls the chart with Helm's registry client.
func (r *Renderer) pullOCI(ctx context.Context, c *Chart, u *url.URL) (*cachedChart, error) {
	base := strings.TrimSuffix(c.URL, "/")
	ref := strings.TrimPrefix(base, "oci://") + "/" + c.Name
	version := c.Version
	// Helm pulls a tag directly when the version parses as a version, and lists tags only for
	// a constraint.
	_, notVersion := semver.NewVersion(version)
	if notVersion == nil {
		if hit := r.cache.get(chartKey{base, c.Name, version}); hit != nil {
			return hit, nil
		}
	}
	client, done, err := r.registryClient(ctx, c.CABundle, u.Host)
	if err != nil {
		return nil, err
	}
	defer done()
	if notVersion != nil {
		tags, err := client.Tags(ref)
		if err != nil {
			if notFound(err) {
				return nil, &Error{Message: fmt.Sprintf("chart %s is not in registry %s", c.Name, base)}
			}
			return nil, fmt.Errorf("listing the versions of chart %s in %s: %w", c.Name, base, err)
		}
		if version, err = registry.GetTagMatchingVersionOrConstraint(tags, version); err != nil {
			return nil, &Error{Message: fmt.Sprintf("no version of chart %s in registry %s matches %q", c.Name, base, c.Version)}
		}
		if hit := r.cache.get(chartKey{base, c.Name, version}); hit != nil {
			return hit, nil
		}
	}
	pulled, err := client.Pull(ref+":"+version, registry.PullOptWithChart(true))
	if err != nil {
		if notFound(err) {
			return nil, &Error{Message: fmt.Sprintf("chart %s %s is not in registry %s", c.Name, version, base)}
		}
		return nil, fmt.Errorf("pulling chart %s %s from %s: %w", c.Name, version, base, err)
	}
	if int64(len(pulled.Chart.Data)) > maxChartBytes {
		return nil, &Error{Message: fmt.Sprintf("chart %s %s is larger than %d MiB", c.Name, version, maxChartBytes>>20)}
	}
	return r.unpack(chartKey{base, c.Name, version}, pulled.Chart.Data)
}

// notFound says whether a registry answered that a repository or tag does not exist.
func notFound(err error) bool {
	var resp *errcode.ErrorResponse
	return errors.Is(err, errdef.ErrNotFound) || (errors.As(err, &resp) && resp.StatusCode == http.StatusNotFound)
}

// unpack unpacks a chart archive and caches its files.
func (r *Renderer) unpack(key chartKey, archive []byte) (*cachedChart, error) {
	files, err := loader.LoadArchiveFiles(bytes.NewReader(archive))
	if err != nil {
		return nil, &Error{Message: fmt.Sprintf("chart %s %s is not a valid chart archive: %v", key.name, key.version, err)}
	}
	cached := &cachedChart{files: files}
	for _, f := range files {
		cached.size += len(f.Data)
	}
	r.cache.add(key, cached)
	return cached, nil
}

// httpClient is a client trusting the system's roots and caBundle's, whose redirects stay on
// https unless the chart's URL is plain HTTP (plain). Without a bundle it shares the
// Renderer's connections; with one, done closes the connections it opened.
func (r *Renderer) httpClient(caBundle []byte, plain bool) (client *http.Client, done func(), err error) {
	if len(caBundle) == 0 {
		return &http.Client{Transport: r.transport, CheckRedirect: r.checkRedirect(plain)}, func() {}, nil
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(caBundle) {
		return nil, nil, &Error{Message: "the chart's CA bundle holds no PEM certificate"}
	}
	t := r.transport.Clone()
	t.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	return &http.Client{Transport: t, CheckRedirect: r.checkRedirect(plain)}, t.CloseIdleConnections, nil
}

// get fetches rawURL, at most limit bytes of it; what names it in errors, which never quote
// the URL. A redirect the client refuses is the content error it returned; any other failure
// is a fetch error.
func get(ctx context.Context, client *http.Client, rawURL string, limit int64, what string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return nil, &Error{Message: fmt.Sprintf("the URL of %s is not a URL", what)}
	}
	req.Header.Set("User-Agent", userAgent)
	resp, err := client.Do(req)
	if err != nil {
		// net/http's error quotes the URL (the redirect's, after one), password masked but
		// user and query as they are.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		var content *Error
		if errors.As(err, &content) {
			return nil, content
		}
		return nil, fmt.Errorf("fetching %s: %w", what, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetching %s: %s", what, resp.Status)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("fetching %s: %w", what, err)
	}
	if int64(len(data)) > limit {
		return nil, &Error{Message: fmt.Sprintf("%s is larger than %d MiB", what, limit>>20)}
	}
	return data, nil
}

// registryClient is Helm's registry client for one pull: anonymous (a pack names no
// credentials, and the controller's own Docker or Helm credentials are not for packs), over
// plain HTTP for the Renderer's plain-HTTP hosts, and bound to ctx, which Helm's client does
// not take itself.
func (r *Renderer) registryClient(ctx context.Context, caBundle []byte, host string) (*registry.Client, func(), error) {
	hc, done, err := r.httpClient(caBundle, r.plainHTTP(host))
	if err != nil {
		return nil, nil, err
	}
	hc.Transport = ctxTransport{ctx: ctx, base: hc.Transport}
	authorizer := auth.Client{Client: hc, Cache: r.authCache}
	authorizer.SetUserAgent(userAgent)
	opts := []registry.ClientOption{
		registry.ClientOptAuthorizer(authorizer),
		// The client opens a credentials file even when, as here, its authorizer never reads
		// it; the empty device keeps it away from the user's files.
		registry.ClientOptCredentialsFile(os.DevNull),
		registry.ClientOptWriter(io.Discard),
	}
	if r.plainHTTP(host) {
		opts = append(opts, registry.ClientOptPlainHTTP())
	}
	client, err := registry.NewClient(opts...)
	if err != nil {
		done()
		return nil, nil, fmt.Errorf("creating a registry client: %w", err)
	}
	return client, done, nil
}

// ctxTransport sends every request with ctx.
type ctxTransport struct {
	ctx  context.Context
	base http.RoundTripper
}

// RoundTrip sends req with the transport's context.
func (t ctxTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	return t.base.RoundTrip(req.WithContext(t.ctx))
}
