package render

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

var opts = Options{ReleaseName: "shop", Namespace: "apps", KubeVersion: "v1.37.1", APIVersions: []string{"example.com/v1/Widget"}}

// names lists "Kind namespace/name" of the objects, in order.
func names(objs []*unstructured.Unstructured) []string {
	var out []string
	for _, u := range objs {
		out = append(out, describe(u))
	}
	return out
}

func find(t *testing.T, objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	t.Helper()
	for _, u := range objs {
		if u.GetKind() == kind && u.GetName() == name {
			return u
		}
	}
	t.Fatalf("no %s %s in %v", kind, name, names(objs))
	return nil
}

func contentError(t *testing.T, err error) *Error {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) || !IsContentError(err) {
		t.Fatalf("error %v (%T) is not a content error", err, err)
	}
	return e
}

func TestChartFromHTTPSRepository(t *testing.T) {
	repo := startRepo(t, webChart("1.0.0"))
	res, err := New().Render(context.Background(), Source{Chart: repo.chartOf("web", "1.0.0"), Values: []byte(`{"replicas":3}`)}, opts)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		// crds/ first, then Helm's install order; the hook and NOTES.txt are left out.
		"CustomResourceDefinition widgets.example.com",
		"ConfigMap apps/shop-info",
		"ClusterRole shop-reader",
		"Deployment apps/shop-web",
		// The Widget CRD in the same render is cluster-scoped: no namespace.
		"Widget shop-widget",
	}
	if got := names(res.Objects); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("objects:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	deploy := find(t, res.Objects, "Deployment", "shop-web")
	if r, _, _ := unstructured.NestedInt64(deploy.Object, "spec", "replicas"); r != 3 {
		t.Errorf("replicas = %d, want the value given, 3", r)
	}
	info := find(t, res.Objects, "ConfigMap", "shop-info")
	data, _, _ := unstructured.NestedStringMap(info.Object, "data")
	if data["kube"] != "v1.37.1" || data["minor"] != "37" {
		t.Errorf("capabilities seen by the template: %v, want v1.37.1 / 37", data)
	}
	if data["widgets"] != "true" {
		t.Errorf("extra API version not visible: %v", data)
	}
	if res.ChartVersion != "1.0.0" || res.HelmVersion != "v3.22.0" {
		t.Errorf("chart version %q, Helm version %q", res.ChartVersion, res.HelmVersion)
	}
	if len(res.SkippedHooks) != 1 || res.SkippedHooks[0] != "Job shop-migrate" {
		t.Errorf("skipped hooks %v", res.SkippedHooks)
	}
	if !strings.HasPrefix(res.Digest, "sha256:") || len(res.Digest) != len("sha256:")+64 {
		t.Errorf("digest %q", res.Digest)
	}
}

func TestChartDefaults(t *testing.T) {
	repo := startRepo(t, webChart("1.0.0"))
	// No values, no Kubernetes version: the chart's values.yaml and Helm's default version.
	res, err := New().Render(context.Background(), Source{Chart: repo.chartOf("web", "1.0.0")}, Options{ReleaseName: "a", Namespace: "b"})
	if err != nil {
		t.Fatal(err)
	}
	deploy := find(t, res.Objects, "Deployment", "a-web")
	if r, _, _ := unstructured.NestedInt64(deploy.Object, "spec", "replicas"); r != 1 {
		t.Errorf("replicas = %d, want values.yaml's 1", r)
	}
	data, _, _ := unstructured.NestedStringMap(find(t, res.Objects, "ConfigMap", "a-info").Object, "data")
	if data["kube"] != "v1.20.0" || data["widgets"] != "false" {
		t.Errorf("default capabilities: %v", data)
	}
}

func TestChartFromOCIRegistry(t *testing.T) {
	reg := startRegistry(t, webChart("1.0.0"), webChart("1.2.0"), webChart("2.0.0"), webChart("2.1.0+build.7"))
	r := New()
	for _, tc := range []struct{ version, want string }{
		{"1.0.0", "1.0.0"},
		{"^1.0.0", "1.2.0"},
		{"~2.0.0", "2.0.0"},
		{"", "2.1.0+build.7"},
		// Tagged 2.1.0_build.7: Helm's registry convention for "+".
		{"2.1.0+build.7", "2.1.0+build.7"},
	} {
		res, err := r.Render(context.Background(), Source{
			Chart:  &Chart{URL: "oci://" + reg.Endpoint + "/charts", Name: "web", Version: tc.version},
			Values: []byte(`{"replicas":2}`),
		}, opts)
		if err != nil {
			t.Fatalf("version %q: %v", tc.version, err)
		}
		if res.ChartVersion != tc.want {
			t.Errorf("version %q resolved to %s, want %s", tc.version, res.ChartVersion, tc.want)
		}
		data, _, _ := unstructured.NestedStringMap(find(t, res.Objects, "ConfigMap", "shop-info").Object, "data")
		if data["chart"] != tc.want {
			t.Errorf("version %q rendered chart %s", tc.version, data["chart"])
		}
	}

	// Pulled versions come from the cache: a registry that is down does not matter.
	reg.Stop()
	if _, err := r.Render(context.Background(), Source{Chart: &Chart{URL: "oci://" + reg.Endpoint + "/charts", Name: "web", Version: "1.2.0"}}, opts); err != nil {
		t.Errorf("cached version with the registry down: %v", err)
	}
	_, err := r.Render(context.Background(), Source{Chart: &Chart{URL: "oci://" + reg.Endpoint + "/charts", Name: "web", Version: "1.1.0"}}, opts)
	if err == nil || IsContentError(err) {
		t.Errorf("uncached version with the registry down: %v, want a fetch error", err)
	}
}

func TestVersionConstraintInRepository(t *testing.T) {
	repo := startRepo(t, webChart("1.0.0"), webChart("1.1.0"), webChart("1.2.0-rc.1"), webChart("2.0.0"))
	for _, tc := range []struct{ version, want string }{
		{"~1.0.0", "1.0.0"},
		{"^1.0", "1.1.0"},
		{">=1.0.0 <2.0.0", "1.1.0"},
		{"", "2.0.0"},
		{"1.2.0-rc.1", "1.2.0-rc.1"},
	} {
		res, err := New().Render(context.Background(), Source{Chart: repo.chartOf("web", tc.version)}, opts)
		if err != nil {
			t.Fatalf("version %q: %v", tc.version, err)
		}
		if res.ChartVersion != tc.want {
			t.Errorf("version %q resolved to %s, want %s", tc.version, res.ChartVersion, tc.want)
		}
	}
}

func TestChartMissing(t *testing.T) {
	repo := startRepo(t, webChart("1.0.0"))
	reg := startRegistry(t, webChart("1.0.0"))
	oci := "oci://" + reg.Endpoint + "/charts"
	for name, c := range map[string]*Chart{
		"repo, no such chart":           repo.chartOf("db", "1.0.0"),
		"repo, no such version":         repo.chartOf("web", "1.0.1"),
		"repo, no version matches":      repo.chartOf("web", "^3"),
		"repo, bad constraint":          repo.chartOf("web", "not a version"),
		"registry, no such chart":       {URL: oci, Name: "db", Version: "1.0.0"},
		"registry, no such version":     {URL: oci, Name: "web", Version: "1.0.1"},
		"registry, no version matches":  {URL: oci, Name: "web", Version: "^3"},
		"registry, no such chart, ^1.0": {URL: oci, Name: "db", Version: "^1.0"},
		"bad URL scheme":                {URL: "ftp://example.com", Name: "web"},
		"http not on loopback":          {URL: "http://charts.example.com", Name: "web"},
		"bad name":                      {URL: repo.srv.URL, Name: "a/b"},
	} {
		_, err := New().Render(context.Background(), Source{Chart: c}, opts)
		e := contentError(t, err)
		if e.Template != "" {
			t.Errorf("%s: %v names a template", name, e)
		}
		t.Logf("%s: %v", name, err)
	}
}

func TestPlainHTTPRepository(t *testing.T) {
	repo := startRepoTLS(t, false, webChart("1.0.0"))
	if !strings.HasPrefix(repo.srv.URL, "http://127.0.0.1:") {
		t.Fatalf("repository at %s", repo.srv.URL)
	}
	if _, err := New().Render(context.Background(), Source{Chart: repo.chartOf("web", "1.0.0")}, opts); err != nil {
		t.Errorf("http:// on loopback: %v", err)
	}
}

func TestDownloadChecks(t *testing.T) {
	repo := startRepo(t, webChart("1.0.0"))
	// An archive that is not the one the index records: a broken mirror, worth retrying.
	repo.mu.Lock()
	good := repo.archives["/charts/web-1.0.0.tgz"]
	repo.archives["/charts/web-1.0.0.tgz"] = good[:len(good)-1]
	repo.mu.Unlock()
	_, err := New().Render(context.Background(), Source{Chart: repo.chartOf("web", "1.0.0")}, opts)
	if err == nil || IsContentError(err) || !strings.Contains(err.Error(), "digest") {
		t.Errorf("archive with another digest: %v, want a fetch error", err)
	}
	repo.mu.Lock()
	repo.archives["/charts/web-1.0.0.tgz"] = good
	repo.mu.Unlock()

	for name, limit := range map[string]*int64{"index": &maxIndexBytes, "chart": &maxChartBytes} {
		saved := *limit
		*limit = 100
		_, err := New().Render(context.Background(), Source{Chart: repo.chartOf("web", "1.0.0")}, opts)
		*limit = saved
		if e := contentError(t, err); !strings.Contains(e.Message, "larger than") {
			t.Errorf("%s over the limit: %v", name, err)
		}
	}
}

func TestFetchErrors(t *testing.T) {
	repo := startRepo(t, webChart("1.0.0"))
	repo.failing.Store(true)
	_, err := New().Render(context.Background(), Source{Chart: repo.chartOf("web", "1.0.0")}, opts)
	if err == nil || IsContentError(err) {
		t.Errorf("repository answering 503: %v, want a fetch error", err)
	}
	repo.failing.Store(false)

	// Without the repository's CA the TLS handshake fails: a fetch error.
	c := repo.chartOf("web", "1.0.0")
	c.CABundle = nil
	if _, err := New().Render(context.Background(), Source{Chart: c}, opts); err == nil || IsContentError(err) {
		t.Errorf("unknown CA: %v, want a fetch error", err)
	}
	// A bundle without a certificate is the pack's problem.
	c.CABundle = []byte("not PEM")
	contentError(t, func() error { _, err := New().Render(context.Background(), Source{Chart: c}, opts); return err }())

	// A cancelled context stops the fetch.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := New().Render(ctx, Source{Chart: repo.chartOf("web", "1.0.0")}, opts); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	reg := startRegistry(t, webChart("1.0.0"))
	if _, err := New().Render(ctx, Source{Chart: &Chart{URL: "oci://" + reg.Endpoint + "/charts", Name: "web", Version: "1.0.0"}}, opts); err == nil || IsContentError(err) {
		t.Errorf("cancelled registry pull: %v", err)
	}
}

func TestCacheAvoidsDownloads(t *testing.T) {
	repo := startRepo(t, webChart("1.0.0"), webChart("1.1.0"))
	r := New()
	render := func(version string) {
		t.Helper()
		if _, err := r.Render(context.Background(), Source{Chart: repo.chartOf("web", version)}, opts); err != nil {
			t.Fatal(err)
		}
	}
	render("1.0.0")
	if n := repo.requests.Load(); n != 2 {
		t.Fatalf("first render made %d requests, want 2 (index and archive)", n)
	}
	render("1.0.0")
	if n := repo.requests.Load(); n != 2 {
		t.Errorf("exact version again made %d more requests, want none", n-2)
	}
	// A constraint needs the index, not the archive again.
	render("~1.0.0")
	if n := repo.requests.Load(); n != 3 {
		t.Errorf("constraint resolving to a cached version made %d requests, want 1 (index)", n-2)
	}
	render("^1.0.0")
	if n := repo.requests.Load(); n != 5 {
		t.Errorf("constraint resolving to a new version made %d requests, want 2", n-3)
	}
	// No cache: every render downloads.
	uncached := New(WithCacheSize(0))
	before := repo.requests.Load()
	for range 2 {
		if _, err := uncached.Render(context.Background(), Source{Chart: repo.chartOf("web", "1.0.0")}, opts); err != nil {
			t.Fatal(err)
		}
	}
	if n := repo.requests.Load() - before; n != 4 {
		t.Errorf("without a cache two renders made %d requests, want 4", n)
	}
}

func TestDigest(t *testing.T) {
	repo := startRepo(t, webChart("1.0.0"))
	r := New()
	render := func(values string) string {
		t.Helper()
		res, err := r.Render(context.Background(), Source{Chart: repo.chartOf("web", "1.0.0"), Values: []byte(values)}, opts)
		if err != nil {
			t.Fatal(err)
		}
		return res.Digest
	}
	a, b := render(`{"replicas":3}`), render(`{"replicas":3}`)
	if a != b {
		t.Errorf("same render, digests %s and %s", a, b)
	}
	if c := render(`{"replicas":4}`); c == a {
		t.Errorf("different values, same digest %s", c)
	}
	if c := render(`{"replicas":3,"image":"nginx"}`); c != a {
		t.Errorf("values equal to the defaults changed the digest")
	}
}

func TestTemplateErrors(t *testing.T) {
	chartWith := func(tpl string) testChart {
		return testChart{name: "bad", version: "0.1.0", values: "a: {}\n", templates: map[string]string{"cm.yaml": tpl, "_helpers.tpl": `{{- define "bad.x" -}}{{ .Values.a.b.c }}{{- end -}}`}}
	}
	for _, tc := range []struct {
		name, tpl  string
		template   string
		line       int
		msgContain string
	}{
		{"nil pointer", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  a: {{ .Values.a.b.c }}\n", "bad/templates/cm.yaml", 6, "nil pointer evaluating"},
		{"required", "apiVersion: v1\nkind: ConfigMap\n\nmetadata:\n  name: {{ required \"name is required\" .Values.name }}\n", "bad/templates/cm.yaml", 5, "name is required"},
		{"fail", "{{ fail \"not supported\" }}\n", "bad/templates/cm.yaml", 1, "not supported"},
		{"parse error", "apiVersion: v1\nkind: ConfigMap\n{{ end }}\n", "bad/templates/cm.yaml", 3, "unexpected {{end}}"},
		{"unknown function", "\n\n{{ nosuchfunc }}\n", "bad/templates/cm.yaml", 3, "function \"nosuchfunc\" not defined"},
		{"in a helper", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ include \"bad.x\" . }}\n", "bad/templates/cm.yaml", 4, "nil pointer evaluating"},
		{"not YAML", "apiVersion: v1\nkind: ConfigMap\nmetadata: [a\n", "bad/templates/cm.yaml", 0, "yaml"},
		{"no kind", "apiVersion: v1\nmetadata:\n  name: x\n", "bad/templates/cm.yaml", 0, "no kind"},
		{"no name", "apiVersion: v1\nkind: ConfigMap\n", "bad/templates/cm.yaml", 0, "no metadata.name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo := startRepo(t, chartWith(tc.tpl))
			_, err := New().Render(context.Background(), Source{Chart: repo.chartOf("bad", "0.1.0")}, opts)
			e := contentError(t, err)
			t.Log(err)
			if e.Template != tc.template || e.Line != tc.line || !strings.Contains(e.Message, tc.msgContain) {
				t.Errorf("error %#v, want template %s line %d and %q", e, tc.template, tc.line, tc.msgContain)
			}
			want := fmt.Sprintf("template %s line %d: ", tc.template, tc.line)
			if tc.line == 0 {
				want = fmt.Sprintf("template %s: ", tc.template)
			}
			if !strings.HasPrefix(err.Error(), want) {
				t.Errorf("Error() = %q, want it to start %q", err.Error(), want)
			}
		})
	}
}

func TestSubcharts(t *testing.T) {
	sub := testChart{name: "cache", version: "0.1.0", values: "size: 1\n", templates: map[string]string{
		"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-cache\ndata:\n  size: {{ .Values.size | quote }}\n",
	}}
	app := testChart{
		name: "app", version: "1.0.0", values: "cache:\n  enabled: true\n",
		templates: map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-app\n"},
		requires:  []*chart.Dependency{{Name: "cache", Version: "0.1.0", Condition: "cache.enabled"}},
		subcharts: []testChart{sub},
	}
	missing := app
	missing.name, missing.subcharts = "broken", nil
	repo := startRepo(t, app, missing)
	res, err := New().Render(context.Background(), Source{Chart: repo.chartOf("app", "1.0.0"), Values: []byte(`{"cache":{"size":9}}`)}, opts)
	if err != nil {
		t.Fatal(err)
	}
	data, _, _ := unstructured.NestedStringMap(find(t, res.Objects, "ConfigMap", "shop-cache").Object, "data")
	if data["size"] != "9" {
		t.Errorf("subchart value %q, want the parent's override 9", data["size"])
	}
	res, err = New().Render(context.Background(), Source{Chart: repo.chartOf("app", "1.0.0"), Values: []byte(`{"cache":{"enabled":false}}`)}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(names(res.Objects), ","); got != "ConfigMap apps/shop-app" {
		t.Errorf("with the subchart disabled: %s", got)
	}
	_, err = New().Render(context.Background(), Source{Chart: repo.chartOf("broken", "1.0.0")}, opts)
	if e := contentError(t, err); !strings.Contains(e.Message, "cache") {
		t.Errorf("missing dependency: %v", err)
	}
}

func TestChartContentErrors(t *testing.T) {
	repo := startRepo(t,
		testChart{name: "old", version: "1.0.0", kubeVersion: "<1.30.0", templates: map[string]string{}},
		testChart{name: "typed", version: "1.0.0", values: "replicas: 1\n", schema: `{"type":"object","properties":{"replicas":{"type":"integer"}}}`},
		testChart{name: "twice", version: "1.0.0", templates: map[string]string{
			"a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n",
			"b.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  namespace: apps\n",
		}},
		webChart("1.0.0"),
	)
	for name, src := range map[string]Source{
		"incompatible Kubernetes": {Chart: repo.chartOf("old", "1.0.0")},
		"duplicate object":        {Chart: repo.chartOf("twice", "1.0.0")},
		"values not an object":    {Chart: repo.chartOf("web", "1.0.0"), Values: []byte(`[1,2]`)},
		"values against schema":   {Chart: repo.chartOf("typed", "1.0.0"), Values: []byte(`{"replicas":"many"}`)},
	} {
		_, err := New().Render(context.Background(), src, opts)
		contentError(t, err)
		t.Logf("%s: %v", name, err)
	}
	_, err := New().Render(context.Background(), Source{Chart: repo.chartOf("web", "1.0.0")}, Options{KubeVersion: "one"})
	contentError(t, err)
}

func TestSourceShape(t *testing.T) {
	for name, src := range map[string]Source{
		"nothing":          {},
		"two":              {Manifests: [][]byte{}, Kustomize: &Kustomize{}},
		"values, no chart": {Manifests: [][]byte{}, Values: []byte(`{}`)},
	} {
		_, err := New().Render(context.Background(), src, opts)
		contentError(t, err)
		t.Logf("%s: %v", name, err)
	}
}

func TestRaw(t *testing.T) {
	res, err := New().Render(context.Background(), Source{Manifests: [][]byte{
		[]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"data":{"n":"1"}}`),
		[]byte(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"tools"}}`),
		[]byte(`{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s","namespace":"other"}},{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},"spec":{"replicas":2}}]}`),
	}}, opts)
	if err != nil {
		t.Fatal(err)
	}
	want := "ConfigMap apps/a,Namespace tools,Secret other/s,Deployment apps/d"
	if got := strings.Join(names(res.Objects), ","); got != want {
		t.Errorf("objects %s, want %s", got, want)
	}
	if r, ok, _ := unstructured.NestedInt64(res.Objects[3].Object, "spec", "replicas"); !ok || r != 2 {
		t.Errorf("replicas not an integer 2: %v", res.Objects[3].Object["spec"])
	}
	if res.HelmVersion != "" || res.ChartVersion != "" || res.SkippedHooks != nil {
		t.Errorf("chart fields set for raw: %+v", res)
	}
	again, err := New().Render(context.Background(), Source{Manifests: [][]byte{
		[]byte(`{"metadata":{"name":"a"},"data":{"n":"1"},"kind":"ConfigMap","apiVersion":"v1"}`),
		[]byte(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"tools"}}`),
		[]byte(`{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s","namespace":"other"}},{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},"spec":{"replicas":2}}]}`),
	}}, opts)
	if err != nil || again.Digest != res.Digest {
		t.Errorf("same objects with keys in another order: digest %s, want %s (%v)", again.Digest, res.Digest, err)
	}
}

func TestBadRaw(t *testing.T) {
	for name, m := range map[string]string{
		"not JSON":       `apiVersion: v1`,
		"not an object":  `[1]`,
		"null":           `null`,
		"no apiVersion":  `{"kind":"ConfigMap","metadata":{"name":"a"}}`,
		"no kind":        `{"apiVersion":"v1","metadata":{"name":"a"}}`,
		"no name":        `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"generateName":"a-"}}`,
		"bad apiVersion": `{"apiVersion":"a/b/c","kind":"ConfigMap","metadata":{"name":"a"}}`,
		"item no name":   `{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"ConfigMap"}]}`,
	} {
		_, err := New().Render(context.Background(), Source{Manifests: [][]byte{[]byte(m)}}, opts)
		contentError(t, err)
		t.Logf("%s: %v", name, err)
	}
	// The same object twice, once with the release namespace spelled out.
	_, err := New().Render(context.Background(), Source{Manifests: [][]byte{
		[]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}`),
		[]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"apps"}}`),
	}}, opts)
	if e := contentError(t, err); e.Message != "ConfigMap apps/a is rendered twice" {
		t.Errorf("duplicate: %q", e.Message)
	}
	// The same name in two namespaces, and two kinds, are different objects.
	if _, err := New().Render(context.Background(), Source{Manifests: [][]byte{
		[]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}`),
		[]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"b"}}`),
		[]byte(`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"a"}}`),
	}}, opts); err != nil {
		t.Error(err)
	}
}

func TestLimits(t *testing.T) {
	many := make([][]byte, MaxObjects+1)
	for i := range many {
		many[i] = fmt.Appendf(nil, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c%d"}}`, i)
	}
	if _, err := New().Render(context.Background(), Source{Manifests: many[:MaxObjects]}, opts); err != nil {
		t.Errorf("%d objects: %v", MaxObjects, err)
	}
	_, err := New().Render(context.Background(), Source{Manifests: many}, opts)
	contentError(t, err)

	big := fmt.Appendf(nil, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"big"},"data":{"a":"%s"}}`, strings.Repeat("x", MaxBytes))
	_, err = New().Render(context.Background(), Source{Manifests: [][]byte{big}}, opts)
	contentError(t, err)
}

func TestPlainHTTP(t *testing.T) {
	r := New(WithPlainHTTPHosts("registry.internal", "Mirror.example:5000"))
	for host, want := range map[string]bool{
		"localhost:5000":        true,
		"LOCALHOST":             true,
		"127.0.0.1:5000":        true,
		"127.1.2.3":             true,
		"[::1]:5000":            true,
		"registry.internal:443": true,
		"mirror.example:5000":   true,
		"mirror.example:5001":   false,
		"ghcr.io":               false,
		"10.0.0.1:5000":         false,
		"localhost.example.com": false,
	} {
		if got := r.plainHTTP(host); got != want {
			t.Errorf("plainHTTP(%q) = %v, want %v", host, got, want)
		}
	}
}

func TestTemplateErrorForms(t *testing.T) {
	for in, want := range map[string]Error{
		`template: web/templates/d.yaml:12:3: executing "web/templates/d.yaml" at <.Values.a.b>: nil pointer evaluating interface {}.b`: {Template: "web/templates/d.yaml", Line: 12, Message: "at <.Values.a.b>: nil pointer evaluating interface {}.b"},
		`parse error at (web/templates/x.yaml:5): unexpected "}" in operand`:                                                            {Template: "web/templates/x.yaml", Line: 5, Message: `unexpected "}" in operand`},
		`execution error at (web/templates/x.yaml:7:14): a is required`:                                                                 {Template: "web/templates/x.yaml", Line: 7, Message: "a is required"},
		`parse error in (web/templates/x.yaml): odd`:                                                                                    {Template: "web/templates/x.yaml", Message: "odd"},
		"rendering template failed:\n  runtime error":                                                                                   {Message: "rendering template failed: runtime error"},
	} {
		got := templateError(errors.New(in))
		if *got != want {
			t.Errorf("templateError(%q) = %#v, want %#v", in, *got, want)
		}
	}
	wrapped := fmt.Errorf("rendering pack: %w", &Error{Message: "x"})
	if !IsContentError(wrapped) || IsContentError(errors.New("x")) || IsContentError(nil) {
		t.Error("IsContentError")
	}
}

// One Renderer serves many packs at once (run with -race).
func TestConcurrentRenders(t *testing.T) {
	repo := startRepo(t, webChart("1.0.0"), webChart("1.1.0"))
	r := New()
	kust := &Kustomize{Files: map[string][]byte{"kustomization.yaml": []byte("resources:\n- d.yaml\n"), "d.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n")}}
	errs := make(chan error, 24)
	for i := range 24 {
		go func() {
			var src Source
			switch i % 3 {
			case 0:
				src = Source{Chart: repo.chartOf("web", "1.0.0")}
			case 1:
				src = Source{Chart: repo.chartOf("web", "^1.0.0"), Values: []byte(`{"replicas":2}`)}
			default:
				src = Source{Kustomize: kust}
			}
			o := opts
			o.APIVersions = []string{fmt.Sprintf("example.com/v%d", i)}
			_, err := r.Render(context.Background(), src, o)
			errs <- err
		}()
	}
	for range 24 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
