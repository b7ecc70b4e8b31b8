// Package render turns an infrastructure pack's content into the Kubernetes objects to deliver:
// a Helm chart pulled from an https chart repository or an OCI registry and rendered with the
// Helm SDK, a kustomize directory built with krusty in memory, or raw objects as given.
//
// Rendering is client-side only, like `helm template`: templates see the target cluster's
// version through .Capabilities.KubeVersion and Helm's built-in API versions plus the ones
// given, `lookup` finds nothing and DNS lookups are off. The chart's crds/ come first, then its
// templates in Helm's install order. Hooks (helm.sh/hook, test hooks included) and NOTES.txt
// are left out: a hook runs at a point of Helm's release lifecycle (before an install, after
// an upgrade, on `helm test`), which a declarative delivery has no moment for, and applying
// one as an ordinary object would run a pre-upgrade Job on every delivery and leave test Pods
// running; Result.SkippedHooks names them. Objects without a namespace get the release
// namespace unless their kind is cluster-scoped (a built-in cluster-scoped kind, or a kind
// that a CustomResourceDefinition in the same render declares cluster-scoped).
//
// Errors come in two kinds: *Error for the content (a template that fails, a chart or version
// that does not exist, a failing kustomization, an invalid or duplicate object, a render over
// MaxObjects or MaxBytes), which only a change of the pack fixes, and any other error for a
// fetch that failed and may succeed later (IsContentError tells them apart).
package render

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"oras.land/oras-go/v2/registry/remote/auth"
)

// Source is one pack's content: exactly one of Chart, Kustomize and Manifests.
type Source struct {
	// Chart is a Helm chart to pull and render.
	Chart *Chart
	// Values is a JSON object of chart values (nil: none); only with Chart.
	Values []byte
	// Kustomize is a kustomize directory to build.
	Kustomize *Kustomize
	// Manifests are raw objects, one JSON object each (a List's items are its objects).
	Manifests [][]byte
}

// Chart is a chart in a chart repository or an OCI registry.
type Chart struct {
	// URL is an https:// chart repository (with an index.yaml) or oci://host[:port]/path, a
	// registry repository prefix: the chart is <URL>/<Name>:<Version>. http:// and plain-HTTP
	// registries are used only for the hosts the Renderer reaches over plain HTTP.
	URL string
	// Name is the chart's name.
	Name string
	// Version is an exact version or a semver constraint, as Helm takes them ("" is the latest
	// stable version).
	Version string
	// CABundle holds PEM roots to trust besides the system's for an https repository or
	// registry; nil trusts the system's roots only.
	CABundle []byte
}

// Kustomize is a kustomize directory tree.
type Kustomize struct {
	// Files is the tree: relative slash paths (from a ConfigMap's keys or an OCIArtifact's
	// files) to contents.
	Files map[string][]byte
	// Path is the directory inside Files that holds kustomization.yaml ("" or "." is the root).
	Path string
}

// Options are the release the content is rendered for.
type Options struct {
	// ReleaseName is the pack's name (Helm's .Release.Name).
	ReleaseName string
	// Namespace is the release namespace (.Release.Namespace); namespaced objects without a
	// namespace get it.
	Namespace string
	// KubeVersion is the target cluster's version, e.g. "v1.37.1"
	// (.Capabilities.KubeVersion); "" is Helm's default.
	KubeVersion string
	// APIVersions are extra .Capabilities.APIVersions ("group/version" or
	// "group/version/Kind").
	APIVersions []string
}

// Result is a render's outcome.
type Result struct {
	// Objects are the rendered objects in order: for a chart its CRDs and then its templates'
	// objects in Helm's install order; for kustomize the build's order; raw objects as given.
	Objects []*unstructured.Unstructured
	// HelmVersion is the version of the Helm SDK that rendered a chart; "" for other packs.
	HelmVersion string
	// ChartVersion is the chart version rendered (the constraint resolved); "" for other packs.
	ChartVersion string
	// Digest is sha256:<hex> over the canonical JSON of Objects: identical renders have
	// identical digests.
	Digest string
	// SkippedHooks names the chart's hooks left out, as "Kind name" (see the package comment).
	SkippedHooks []string
}

const (
	defaultCacheEntries = 64
	defaultCacheBytes   = 256 << 20
	userAgent           = "plinth-controller"
)

// Renderer renders packs. It keeps the charts it pulled in memory, so rendering a chart
// version again downloads nothing; it is safe for concurrent use.
type Renderer struct {
	cache      *chartCache
	plainHosts map[string]bool
	transport  *http.Transport
	authCache  auth.Cache
}

// Option configures a Renderer.
type Option func(*Renderer)

// WithCacheSize bounds the chart cache to n charts (default 64); 0 disables it.
func WithCacheSize(n int) Option {
	return func(r *Renderer) { r.cache.maxEntries = n }
}

// WithPlainHTTPHosts adds hosts (host or host:port) reached over plain HTTP: http:// chart
// repositories and registries without TLS. Loopback hosts (localhost, 127.0.0.0/8, ::1)
// always are, as the registries Plinth runs are.
func WithPlainHTTPHosts(hosts ...string) Option {
	return func(r *Renderer) {
		for _, h := range hosts {
			r.plainHosts[strings.ToLower(h)] = true
		}
	}
}

// New returns a Renderer.
func New(opts ...Option) *Renderer {
	t := http.DefaultTransport.(*http.Transport).Clone()
	r := &Renderer{
		cache:      newChartCache(defaultCacheEntries, defaultCacheBytes),
		plainHosts: map[string]bool{},
		transport:  t,
		authCache:  auth.NewCache(),
	}
	for _, o := range opts {
		o(r)
	}
	return r
}

// Render renders src for the release opts describes.
func (r *Renderer) Render(ctx context.Context, src Source, opts Options) (Result, error) {
	n := 0
	if src.Chart != nil {
		n++
	}
	if src.Kustomize != nil {
		n++
	}
	if src.Manifests != nil {
		n++
	}
	if n != 1 {
		return Result{}, &Error{Message: "a pack has exactly one of a chart, a kustomize directory and manifests"}
	}
	if src.Values != nil && src.Chart == nil {
		return Result{}, &Error{Message: "values apply to a chart only"}
	}
	var (
		res  Result
		objs []*unstructured.Unstructured
		err  error
	)
	switch {
	case src.Chart != nil:
		var ch *pulledChart
		if ch, err = r.pull(ctx, src.Chart); err != nil {
			return Result{}, err
		}
		res.HelmVersion = HelmVersion()
		res.ChartVersion = ch.chart.Metadata.Version
		objs, res.SkippedHooks, err = renderChart(ch.chart, src.Values, opts)
	case src.Kustomize != nil:
		objs, err = renderKustomize(src.Kustomize)
	default:
		objs, err = decodeManifests(src.Manifests)
	}
	if err != nil {
		return Result{}, err
	}
	if err := finish(objs, opts.Namespace, &res); err != nil {
		return Result{}, err
	}
	return res, nil
}

// decodeManifests decodes raw objects.
func decodeManifests(manifests [][]byte) ([]*unstructured.Unstructured, error) {
	var objs []*unstructured.Unstructured
	for i, m := range manifests {
		decoded, err := decodeJSON(m)
		if err != nil {
			return nil, &Error{Message: fmt.Sprintf("manifest %d is not a JSON object: %v", i+1, err)}
		}
		if len(decoded) == 0 {
			return nil, &Error{Message: fmt.Sprintf("manifest %d is empty", i+1)}
		}
		for _, u := range decoded {
			if msg := checkObject(u); msg != "" {
				return nil, &Error{Message: fmt.Sprintf("manifest %d: %s", i+1, msg)}
			}
		}
		objs = append(objs, decoded...)
	}
	return objs, nil
}

// plainHTTP says whether host (host or host:port) is reached over plain HTTP.
func (r *Renderer) plainHTTP(hostport string) bool {
	hostport = strings.ToLower(hostport)
	if r.plainHosts[hostport] {
		return true
	}
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if r.plainHosts[host] || host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
