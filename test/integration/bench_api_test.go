package integration

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plinth-dev/plinth/test/integration/framework"
)

// TestBenchAPI runs make bench's command (hack/bench-api) at a small size on its own local
// platform: every target answers every operation, and the report has a figure, or a note that
// says why not, for each.
func TestBenchAPI(t *testing.T) {
	if err := framework.EnsurePlatformBinaries(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "bench-api")
	build := exec.Command("go", "build", "-o", bin, "./hack/bench-api")
	build.Dir = framework.RepoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building bench-api: %v\n%s", err, out)
	}

	t.Run("settings that cannot give a figure are refused", func(t *testing.T) {
		for _, args := range [][]string{{"--objects", "0"}, {"--workers", "0"}, {"--rounds", "-1"}} {
			cmd := exec.Command(bin, args...)
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(string(out), args[0]+" must be") {
				t.Errorf("%v: %v\n%s", args, err, out)
			}
		}
	})

	t.Run("a small run reports every operation for every target", func(t *testing.T) {
		report := filepath.Join(dir, "bench.json")
		docs := filepath.Join(dir, "benchmarks.md")
		if err := os.WriteFile(docs, []byte("# Benchmarks\n<!-- bench-api:begin (make bench writes this section) -->\nold\n<!-- bench-api:end -->\nafter\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "--objects", "40", "--workers", "4", "--rounds", "2", "--lists", "1", "--cpu-window", "1s",
			"--bin-dir", framework.BinDir(), "--json", report, "--docs", docs)
		cmd.Dir = framework.RepoRoot()
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("bench-api: %v\n%s", err, out)
		}
		data, err := os.ReadFile(report)
		if err != nil {
			t.Fatal(err)
		}
		var r struct {
			Targets []string `json:"targets"`
			Results map[string]map[string]struct {
				Throughput float64 `json:"throughputPerSecond"`
				P50        float64 `json:"p50Milliseconds"`
				Note       string  `json:"note"`
			} `json:"results"`
			RSSMiB    map[string]float64 `json:"rssMiB"`
			CPUPerGet map[string]struct {
				Kube   float64 `json:"kubeAPIServerMilliseconds"`
				Plinth float64 `json:"plinthAPIServerMilliseconds"`
			} `json:"cpuPerGet"`
		}
		if err := json.Unmarshal(data, &r); err != nil {
			t.Fatal(err)
		}
		want := []string{"CRD", "Plinth via aggregator", "Plinth direct", "etcd", "ConfigMap"}
		if strings.Join(r.Targets, ",") != strings.Join(want, ",") {
			t.Fatalf("targets %v", r.Targets)
		}
		for _, target := range want {
			for _, op := range []string{"create", "get", "get, CBOR", "update status", "list all, JSON", "list all, protobuf", "list all, CBOR", "watch (N events)"} {
				res, ok := r.Results[target][op]
				switch {
				case !ok:
					t.Errorf("%s: no %q", target, op)
				case res.Note == "" && (res.Throughput <= 0 || res.P50 <= 0):
					t.Errorf("%s %s: %+v", target, op, res)
				case res.Note != "" && strings.HasSuffix(op, "JSON"):
					t.Errorf("%s serves no JSON list: %s", target, res.Note)
				}
			}
			if r.RSSMiB[target] <= 0 {
				t.Errorf("%s: no memory figure", target)
			}
		}
		// Each server's CPU per get, where it serves the get: kube-apiserver for the CRD, the
		// ConfigMaps and (as the proxy) Plinth through the aggregator, plinth-apiserver for
		// both Plinth targets.
		cpu := r.CPUPerGet
		if cpu["CRD"].Kube <= 0 || cpu["ConfigMap"].Kube <= 0 || cpu["Plinth via aggregator"].Kube <= 0 ||
			cpu["Plinth via aggregator"].Plinth <= 0 || cpu["Plinth direct"].Plinth <= 0 {
			t.Errorf("CPU per get: %+v", cpu)
		}
		if _, ok := cpu["etcd"]; ok {
			t.Errorf("a CPU per get for raw etcd, which neither server serves")
		}
		// plinth-apiserver serves CBOR (the benchmark turns the gate on); kube-apiserver does not.
		if res := r.Results["Plinth via aggregator"]["get, CBOR"]; res.Note != "" {
			t.Errorf("Plinth through the aggregator serves no CBOR: %s", res.Note)
		}
		if res := r.Results["ConfigMap"]["list all, protobuf"]; res.Note != "" {
			t.Errorf("ConfigMaps are not listed in protobuf: %s", res.Note)
		}
		written, _ := os.ReadFile(docs)
		if !strings.Contains(string(written), "| create |") || strings.Contains(string(written), "old") || !strings.HasSuffix(string(written), "after\n") {
			t.Errorf("docs section:\n%s", written)
		}
	})
}
