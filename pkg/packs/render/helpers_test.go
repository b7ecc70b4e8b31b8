package render

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/pem"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"sync/atomic"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/registry"
	"helm.sh/helm/v3/pkg/repo"
	"sigs.k8s.io/yaml"

	"github.com/plinth-dev/plinth/pkg/oci/artifact/artifacttest"
)

// testChart describes a chart built in a test.
type testChart struct {
	name, version string
	kubeVersion   string
	schema        string              // values.schema.json
	values        string              // values.yaml
	templates     map[string]string   // templates/<key>
	crds          map[string]string   // crds/<key>
	requires      []*chart.Dependency // Chart.yaml's dependencies
	subcharts     []testChart         // charts/
}

// build makes the chart in memory.
func (c testChart) build() *chart.Chart {
	ch := &chart.Chart{
		Metadata: &chart.Metadata{APIVersion: chart.APIVersionV2, Name: c.name, Version: c.version, KubeVersion: c.kubeVersion, Dependencies: c.requires},
	}
	for name, data := range c.templates {
		ch.Templates = append(ch.Templates, &chart.File{Name: "templates/" + name, Data: []byte(data)})
	}
	for name, data := range c.crds {
		ch.Files = append(ch.Files, &chart.File{Name: "crds/" + name, Data: []byte(data)})
	}
	// chartutil.Save writes values.yaml from Raw, not from Values.
	ch.Raw = append(ch.Raw, &chart.File{Name: "values.yaml", Data: []byte(c.values)})
	if c.schema != "" {
		ch.Schema = []byte(c.schema)
	}
	for _, sub := range c.subcharts {
		ch.AddDependency(sub.build())
	}
	return ch
}

// archive packages the chart with the Helm SDK and returns the .tgz.
func (c testChart) archive(t testing.TB) []byte {
	t.Helper()
	file, err := chartutil.Save(c.build(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// chartRepo is an https chart repository: /index.yaml and /charts/<name>-<version>.tgz.
type chartRepo struct {
	srv      *httptest.Server
	requests atomic.Int64
	mu       sync.Mutex
	index    *repo.IndexFile
	archives map[string][]byte
	// redirects answers a path with a 302 to another URL.
	redirects map[string]string
	failing   atomic.Bool
}

func startRepo(t testing.TB, charts ...testChart) *chartRepo {
	return startRepoTLS(t, true, charts...)
}

// startRepoTLS starts a repository over https or, without tls, plain http.
func startRepoTLS(t testing.TB, tls bool, charts ...testChart) *chartRepo {
	t.Helper()
	r := &chartRepo{index: repo.NewIndexFile(), archives: map[string][]byte{}, redirects: map[string]string{}}
	r.srv = httptest.NewUnstartedServer(http.HandlerFunc(r.serve))
	// Tests that leave the CA out fail handshakes on purpose.
	r.srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	if tls {
		r.srv.StartTLS()
	} else {
		r.srv.Start()
	}
	t.Cleanup(r.srv.Close)
	for _, c := range charts {
		r.add(t, c)
	}
	return r
}

func (r *chartRepo) add(t testing.TB, c testChart) {
	t.Helper()
	data := c.archive(t)
	sum := sha256.Sum256(data)
	file := c.name + "-" + c.version + ".tgz"
	r.mu.Lock()
	defer r.mu.Unlock()
	md := &chart.Metadata{APIVersion: chart.APIVersionV2, Name: c.name, Version: c.version}
	// Relative URLs, as `helm repo index` writes without --url.
	if err := r.index.MustAdd(md, "charts/"+file, "", hex.EncodeToString(sum[:])); err != nil {
		t.Fatal(err)
	}
	r.index.SortEntries()
	r.archives["/charts/"+file] = data
}

func (r *chartRepo) serve(w http.ResponseWriter, req *http.Request) {
	r.requests.Add(1)
	if r.failing.Load() {
		http.Error(w, "down", http.StatusServiceUnavailable)
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if to, ok := r.redirects[req.URL.Path]; ok {
		http.Redirect(w, req, to, http.StatusFound)
		return
	}
	if req.URL.Path == "/index.yaml" {
		data, err := yaml.Marshal(r.index)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		_, _ = w.Write(data)
		return
	}
	data, ok := r.archives[req.URL.Path]
	if !ok {
		http.NotFound(w, req)
		return
	}
	_, _ = w.Write(data)
}

// ca is the PEM of the repository's certificate (nil over plain http).
func (r *chartRepo) ca() []byte {
	if r.srv.Certificate() == nil {
		return nil
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: r.srv.Certificate().Raw})
}

// chartOf is the repository's Chart for name and version.
func (r *chartRepo) chartOf(name, version string) *Chart {
	return &Chart{URL: r.srv.URL, Name: name, Version: version, CABundle: r.ca()}
}

// startRegistry starts the test OCI registry and pushes the charts to <endpoint>/charts with
// Helm's registry client.
func startRegistry(t testing.TB, charts ...testChart) *artifacttest.Registry {
	t.Helper()
	reg := artifacttest.Start(t)
	client, err := registry.NewClient(registry.ClientOptPlainHTTP(), registry.ClientOptCredentialsFile(os.DevNull))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range charts {
		if _, err := client.Push(c.archive(t), reg.Endpoint+"/charts/"+c.name+":"+c.version); err != nil {
			t.Fatal(err)
		}
	}
	return reg
}

// webChart is a small chart with values, a cluster-scoped object, a CRD, a hook and notes.
func webChart(version string) testChart {
	return testChart{
		name:    "web",
		version: version,
		values:  "replicas: 1\nimage: nginx\n",
		templates: map[string]string{
			"deploy.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-web
spec:
  replicas: {{ .Values.replicas }}
  template:
    spec:
      containers:
      - name: web
        image: {{ .Values.image }}
`,
			"info.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-info
  namespace: {{ .Release.Namespace }}
data:
  kube: {{ .Capabilities.KubeVersion.Version | quote }}
  minor: {{ .Capabilities.KubeVersion.Minor | quote }}
  widgets: {{ .Capabilities.APIVersions.Has "example.com/v1/Widget" | quote }}
  chart: {{ .Chart.Version | quote }}
`,
			"role.yaml": `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: {{ .Release.Name }}-reader
rules: []
---
apiVersion: example.com/v1
kind: Widget
metadata:
  name: {{ .Release.Name }}-widget
`,
			"hook.yaml": `apiVersion: batch/v1
kind: Job
metadata:
  name: {{ .Release.Name }}-migrate
  annotations:
    helm.sh/hook: pre-install,pre-upgrade
spec: {}
`,
			"NOTES.txt": "Installed {{ .Release.Name }}.\n",
		},
		crds: map[string]string{
			"widgets.yaml": `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Cluster
  names: {kind: Widget, plural: widgets}
`,
		},
	}
}
