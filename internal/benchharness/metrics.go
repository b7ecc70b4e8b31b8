package benchharness

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Counts are a metric's samples summed by a key made of some of their labels.
type Counts map[string]float64

// Sub is c minus before, key by key: what happened between two readings of a counter.
func (c Counts) Sub(before Counts) Counts {
	out := Counts{}
	for k, v := range c {
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

// String lists the counts one a line, largest first (ties by key).
func (c Counts) String() string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if c[keys[i]] != c[keys[j]] {
			return c[keys[i]] > c[keys[j]]
		}
		return keys[i] < keys[j]
	})
	var out strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&out, "%8.0f %s\n", c[k], k)
	}
	return out.String()
}

// WriteFile writes the counts as String lists them.
func (c Counts) WriteFile(path string) error {
	return os.WriteFile(path, []byte(c.String()), 0o644)
}

// SumBy sums the samples of one metric in Prometheus' text format by key(labels).
func SumBy(text, metric string, key func(labels map[string]string) string) (Counts, error) {
	out := Counts{}
	for _, line := range strings.Split(text, "\n") {
		rest, ok := strings.CutPrefix(line, metric+"{")
		if !ok {
			continue
		}
		end := strings.LastIndex(rest, "}")
		if end < 0 {
			return nil, fmt.Errorf("%s: no closing brace in %q", metric, line)
		}
		labels, err := parseLabels(rest[:end])
		if err != nil {
			return nil, fmt.Errorf("%s: %w in %q", metric, err, line)
		}
		fields := strings.Fields(rest[end+1:])
		if len(fields) == 0 {
			return nil, fmt.Errorf("%s: no value in %q", metric, line)
		}
		value, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", metric, err)
		}
		out[key(labels)] += value
	}
	return out, nil
}

// parseLabels reads name="value" pairs separated by commas; values are quoted Go-style, so a
// comma or a brace inside one is no separator.
func parseLabels(s string) (map[string]string, error) {
	labels := map[string]string{}
	for s = strings.TrimSpace(s); s != ""; {
		name, rest, ok := strings.Cut(s, "=")
		if !ok {
			return nil, fmt.Errorf("label without a value")
		}
		quoted, err := strconv.QuotedPrefix(rest)
		if err != nil {
			return nil, fmt.Errorf("label %s: %w", name, err)
		}
		value, err := strconv.Unquote(quoted)
		if err != nil {
			return nil, fmt.Errorf("label %s: %w", name, err)
		}
		labels[strings.TrimSpace(name)] = value
		s = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(rest[len(quoted):]), ","))
	}
	return labels, nil
}

// APIRequests are kube-apiserver's requests so far by group/resource/subresource and verb,
// with the response code when it is not a success.
func APIRequests(ctx context.Context, cfg *rest.Config) (Counts, error) {
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	data, err := client.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, err
	}
	return SumBy(string(data), "apiserver_request_total", requestKey)
}

// requestKey names a kube-apiserver request sample: "apps/deployments/status PUT",
// "/pods/ POST 403" for a failed one, and "apps/deployments/ APPLY dryRun" for a dry-run (a
// drift check's server-side apply, which writes nothing).
func requestKey(l map[string]string) string {
	key := l["group"] + "/" + l["resource"] + "/" + l["subresource"] + " " + l["verb"]
	if l["dry_run"] != "" {
		key += " dryRun"
	}
	if code := l["code"]; code != "" && !strings.HasPrefix(code, "2") {
		key += " " + code
	}
	return key
}

// Reconciles are plinth-controller's reconciles so far by controller and result, read from its
// metrics address (localplatform's ControllerURL).
func Reconciles(ctx context.Context, controllerURL string) (Counts, error) {
	text, err := controllerMetrics(ctx, controllerURL)
	if err != nil {
		return nil, err
	}
	return SumBy(text, "plinth_reconcile_total", func(l map[string]string) string {
		return l["controller"] + " " + l["result"]
	})
}

// ReconcileSeconds is the time plinth-controller's reconciles took so far, by controller.
func ReconcileSeconds(ctx context.Context, controllerURL string) (Counts, error) {
	text, err := controllerMetrics(ctx, controllerURL)
	if err != nil {
		return nil, err
	}
	return SumBy(text, "plinth_reconcile_duration_seconds_sum", func(l map[string]string) string { return l["controller"] })
}

func controllerMetrics(ctx context.Context, controllerURL string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, controllerURL+"/metrics", nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s/metrics: %s", controllerURL, resp.Status)
	}
	data, err := io.ReadAll(resp.Body)
	return string(data), err
}
