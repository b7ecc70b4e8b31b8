package main

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/releaseutil"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/plinth-dev/plinth/pkg/oci/artifact/artifacttest"
	"github.com/plinth-dev/plinth/pkg/packs/render"
)

// kindCounts counts objects by kind and checks their names are distinct and start with the
// release name.
func kindCounts(t *testing.T, release string, objs []*unstructured.Unstructured) map[string]int {
	t.Helper()
	counts := map[string]int{}
	names := map[string]bool{}
	for _, o := range objs {
		key := o.GetKind() + "/" + o.GetName()
		if names[key] {
			t.Errorf("%s twice", key)
		}
		names[key] = true
		if !strings.HasPrefix(o.GetName(), release+"-") {
			t.Errorf("%s is not named after release %s", key, release)
		}
		if o.GetLabels()["app.kubernetes.io/instance"] != release {
			t.Errorf("%s lacks the instance label: %v", key, o.GetLabels())
		}
		counts[o.GetKind()]++
	}
	return counts
}

func wantCounts(n int) map[string]int {
	return map[string]int{"ConfigMap": n, "Secret": n, "Service": n, "Deployment": n}
}

// The chart as plinth-controller renders it: pushed with pushChart to a registry, pulled and
// rendered by pkg/packs/render, 200 objects by default and 1000 with count 250.
func TestChartPushedAndRenderedAsAPack(t *testing.T) {
	reg := artifacttest.Start(t)
	if err := pushChart(reg.Endpoint, "1.0.3"); err != nil {
		t.Fatal(err)
	}
	r := render.New()
	for _, c := range []struct {
		values []byte
		count  int
	}{{nil, defaultCount}, {[]byte(`{"count":250}`), driftCount}} {
		src := render.Source{Chart: &render.Chart{URL: chartURL(reg.Endpoint), Name: chartName, Version: "1.0.3"}, Values: c.values}
		res, err := r.Render(context.Background(), src, render.Options{ReleaseName: "pack-01", Namespace: "bench-pack-01", KubeVersion: "v1.37.0"})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Objects) != c.count*kindsPerCopy || res.ChartVersion != "1.0.3" {
			t.Fatalf("rendered %d objects of chart %s, want %d of 1.0.3", len(res.Objects), res.ChartVersion, c.count*kindsPerCopy)
		}
		if got := kindCounts(t, "pack-01", res.Objects); fmt.Sprint(got) != fmt.Sprint(wantCounts(c.count)) {
			t.Errorf("kinds %v, want %v", got, wantCounts(c.count))
		}
	}
	if err := pushChart(reg.Endpoint+"0", "1.0.0"); err == nil {
		t.Error("pushing to a registry that is not there did not fail")
	}
}

// The chart as Helm installs it: action.Install renders the same objects (client-only, as
// helm template), the Deployment referring to its ConfigMap and Secret, with 0 replicas.
func TestChartRenderedByHelm(t *testing.T) {
	ch, err := buildChart("1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	install := action.NewInstall(&action.Configuration{})
	install.DryRun, install.ClientOnly, install.ReleaseName, install.Namespace = true, true, "helm-01", "bench-helm-01"
	rel, err := install.Run(ch, nil)
	if err != nil {
		t.Fatal(err)
	}
	var objs []*unstructured.Unstructured
	for _, doc := range releaseutil.SplitManifests(rel.Manifest) {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			t.Fatal(err)
		}
		objs = append(objs, u)
	}
	if got := kindCounts(t, "helm-01", objs); fmt.Sprint(got) != fmt.Sprint(wantCounts(defaultCount)) {
		t.Errorf("kinds %v, want %v", got, wantCounts(defaultCount))
	}
	for _, o := range objs {
		if o.GetKind() != "Deployment" || o.GetName() != "helm-01-web-007" {
			continue
		}
		replicas, _, _ := unstructured.NestedInt64(o.Object, "spec", "replicas")
		containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
		if replicas != 0 || len(containers) != 1 || !strings.Contains(fmt.Sprint(containers[0]), "helm-01-config-007") ||
			!strings.Contains(fmt.Sprint(containers[0]), "helm-01-secret-007") {
			t.Errorf("Deployment helm-01-web-007: replicas %d, containers %v", replicas, containers)
		}
	}
}

func TestChartURL(t *testing.T) {
	if got := chartURL("localhost:5000"); got != "oci://localhost:5000/charts" {
		t.Errorf("chartURL = %q", got)
	}
}
