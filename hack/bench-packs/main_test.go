package main

import (
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/rest"

	infrav1alpha1 "github.com/plinth-dev/plinth/pkg/apis/infrastructure/v1alpha1"
)

func TestOptionsValidate(t *testing.T) {
	good := options{rounds: 5, warmup: 1, driftPasses: 3, helmQPS: 50, helmBurst: 100, timeout: time.Minute, roundTimeout: time.Minute}
	if err := good.validate(); err != nil {
		t.Fatalf("good options refused: %v", err)
	}
	for name, change := range map[string]func(*options){
		"no rounds":        func(o *options) { o.rounds = 0 },
		"negative warmup":  func(o *options) { o.warmup = -1 },
		"negative passes":  func(o *options) { o.driftPasses = -1 },
		"zero qps":         func(o *options) { o.helmQPS = 0 },
		"zero burst":       func(o *options) { o.helmBurst = 0 },
		"no round timeout": func(o *options) { o.roundTimeout = 0 },
		"no timeout":       func(o *options) { o.timeout = -time.Second },
	} {
		o := good
		change(&o)
		if err := o.validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	noDrift := good
	noDrift.driftPasses = 0
	if err := noDrift.validate(); err != nil {
		t.Errorf("--drift-passes 0 (no drift figure) refused: %v", err)
	}
}

func TestPackObject(t *testing.T) {
	p := packObject("pack-01", "bench-pack-01", "oci://localhost:5000/charts", "1.0.1", defaultCount)
	if p.Name != "pack-01" || p.Spec.Version != "v1.0.0" || p.Spec.TargetNamespace != "bench-pack-01" ||
		len(p.Spec.TargetClusters) != 1 || p.Spec.TargetClusters[0] != benchCluster || p.Spec.Values != nil {
		t.Errorf("pack %+v", p.Spec)
	}
	if c := p.Spec.Chart; c == nil || c.URL != "oci://localhost:5000/charts" || c.Name != chartName || c.Version != "1.0.1" {
		t.Errorf("chart %+v", p.Spec.Chart)
	}
	drift := packObject("drift", "bench-drift", "oci://localhost:5000/charts", "2.0.0", driftCount)
	var values map[string]int
	if drift.Spec.Values == nil || json.Unmarshal(drift.Spec.Values.Raw, &values) != nil || values["count"] != driftCount {
		t.Errorf("drift pack values %v", drift.Spec.Values)
	}
}

func TestInstancePredicates(t *testing.T) {
	now := metav1.Now()
	inst := &infrav1alpha1.InfrastructurePackInstance{}
	if instanceReady(inst) || !instanceExists(inst) {
		t.Error("a new instance is Ready, or does not exist")
	}
	inst.Status.Conditions = []metav1.Condition{{Type: infrav1alpha1.ConditionReady, Status: metav1.ConditionTrue},
		{Type: infrav1alpha1.ConditionDrifted, Status: metav1.ConditionFalse, Reason: infrav1alpha1.ReasonNoDrift, Message: "Nothing has drifted since the delivery."}}
	if instanceReady(inst) {
		t.Error("Ready without a delivered revision")
	}
	inst.Status.DeliveredAt, inst.Status.Revision = &now, 1
	if !instanceReady(inst) {
		t.Error("a delivered Ready instance is not ready")
	}
	checked := driftChecked(200)
	if checked(inst) {
		t.Error("the delivery's Drifted condition taken for a drift pass")
	}
	inst.Status.Conditions[1].Message = "The 1000 delivered objects match what was applied."
	if checked(inst) {
		t.Error("a pass over another count taken for this one")
	}
	inst.Status.Conditions[1].Message = "The 200 delivered objects match what was applied."
	if !checked(inst) {
		t.Error("a clean drift pass not seen")
	}
	inst.Status.Conditions[1].Status, inst.Status.Conditions[1].Reason = metav1.ConditionTrue, infrav1alpha1.ReasonDrifted
	if checked(inst) {
		t.Error("a drifted instance taken for a clean pass")
	}
	if packRendered(&infrav1alpha1.InfrastructureClusterPack{}) {
		t.Error("a pack without a revision is rendered")
	}
	if !packRendered(&infrav1alpha1.InfrastructureClusterPack{Status: infrav1alpha1.InfrastructureClusterPackStatus{Revision: 1}}) {
		t.Error("a pack with revision 1 is not rendered")
	}
}

func TestConditions(t *testing.T) {
	got := conditions([]metav1.Condition{{Type: "Ready", Status: metav1.ConditionFalse, Reason: "DeliveryFailed", Message: "Applying failed."}})
	if got != "[Ready=False (DeliveryFailed: Applying failed.)]" {
		t.Errorf("conditions = %q", got)
	}
}

// Helm's settings are the helm command's with the benchmark's kubeconfig, limits, namespace,
// files and discovery cache.
func TestHelmSettings(t *testing.T) {
	dir := t.TempDir()
	h := helmInstall{kubeconfig: "/tmp/admin.kubeconfig", discoveryCache: filepath.Join(dir, "discovery"), dir: filepath.Join(dir, "helm-01"),
		qps: 50, burst: 100, namespace: "bench-helm-01"}
	s := h.settings()
	if s.KubeConfig != h.kubeconfig || s.QPS != 50 || s.BurstLimit != 100 || s.Namespace() != "bench-helm-01" ||
		!strings.HasPrefix(s.RepositoryCache, h.dir) || !strings.HasPrefix(s.RegistryConfig, h.dir) || !strings.HasPrefix(s.RepositoryConfig, h.dir) {
		t.Errorf("settings %+v", s)
	}
	flags, ok := s.RESTClientGetter().(*genericclioptions.ConfigFlags)
	if !ok || flags.CacheDir == nil || *flags.CacheDir != h.discoveryCache {
		t.Errorf("discovery cache not set: %+v", flags)
	}
	if flags.WrapConfigFn == nil {
		t.Fatal("no WrapConfigFn")
	}
	if cfg := flags.WrapConfigFn(&rest.Config{}); cfg.QPS != 50 || cfg.Burst != 100 {
		t.Errorf("Helm's client has QPS %v and burst %d, want 50 and 100", cfg.QPS, cfg.Burst)
	}
}

func TestCountingClientsCount(t *testing.T) {
	c := &countingClients{}
	for _, r := range []*http.Request{
		{Method: http.MethodGet, URL: &url.URL{Path: "/api/v1/namespaces/x/configmaps"}},
		{Method: http.MethodPatch, URL: &url.URL{Path: "/api/v1/namespaces/x/configmaps/a", RawQuery: "dryRun=All&fieldManager=plinth-packs&force=true"}},
		{Method: http.MethodPatch, URL: &url.URL{Path: "/api/v1/namespaces/x/configmaps/a", RawQuery: "fieldManager=plinth-packs&force=true"}},
	} {
		c.count(r)
	}
	if c.requests.Load() != 3 || c.dryRuns.Load() != 1 {
		t.Errorf("%d requests, %d dry-runs; want 3 and 1", c.requests.Load(), c.dryRuns.Load())
	}
}

func TestCPUTimeAdvances(t *testing.T) {
	before := cpuTime()
	deadline := time.Now().Add(5 * time.Second)
	x := 0
	for cpuTime() == before && time.Now().Before(deadline) {
		for i := 0; i < 1e6; i++ {
			x += i
		}
	}
	if cpuTime() <= before {
		t.Errorf("getrusage did not advance after busy work (%d)", x)
	}
}

func TestStartCPUProfile(t *testing.T) {
	stop, err := startCPUProfile("")
	if err != nil {
		t.Fatal(err)
	}
	stop() // nothing to stop
	file := filepath.Join(t.TempDir(), "cpu.pprof")
	if stop, err = startCPUProfile(file); err != nil {
		t.Fatal(err)
	}
	stop()
	if info, err := os.Stat(file); err != nil || info.Size() == 0 {
		t.Errorf("no profile written: %v", err)
	}
	if _, err := startCPUProfile(filepath.Join(t.TempDir(), "missing", "cpu.pprof")); err == nil {
		t.Error("a profile into a missing directory did not fail")
	}
}
