package benchharness

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

const apiMetrics = `# HELP apiserver_request_total Counter of apiserver requests
# TYPE apiserver_request_total counter
apiserver_request_total{code="201",component="apiserver",group="apps",resource="deployments",subresource="",verb="APPLY",version="v1"} 500
apiserver_request_total{code="409",component="apiserver",group="apps",resource="deployments",subresource="",verb="APPLY",version="v1"} 2
apiserver_request_total{code="200",component="apiserver",dry_run="All",group="apps",resource="deployments",subresource="",verb="APPLY",version="v1"} 40
apiserver_request_total{code="200",component="apiserver",dry_run="",group="apps",resource="deployments",subresource="",verb="APPLY",version="v1"} 1
apiserver_request_total{code="200",component="apiserver",group="apps",resource="deployments",subresource="status",verb="PUT",version="v1"} 1.5e3
apiserver_request_total{code="200",component="apiserver",group="",resource="pods",subresource="",verb="LIST",version="v1",note="a, \"quoted\" {value}"} 7
apiserver_request_total_other{group="apps"} 99
apiserver_request_duration_seconds_bucket{group="apps",le="0.1"} 3
`

func TestSumBy(t *testing.T) {
	got, err := SumBy(apiMetrics, "apiserver_request_total", requestKey)
	if err != nil {
		t.Fatal(err)
	}
	want := Counts{"apps/deployments/ APPLY": 501, "apps/deployments/ APPLY 409": 2, "apps/deployments/ APPLY dryRun": 40, "apps/deployments/status PUT": 1500, "/pods/ LIST": 7}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got %v, want %v", got, want)
	}
	notes, err := SumBy(apiMetrics, "apiserver_request_total", func(l map[string]string) string { return l["note"] })
	if err != nil {
		t.Fatal(err)
	}
	if notes[`a, "quoted" {value}`] != 7 {
		t.Errorf("a quoted label value with a comma and braces was not read: %v", notes)
	}
	for name, bad := range map[string]string{
		"no brace":    `m{a="b" 1`,
		"no value":    `m{a="b"}`,
		"bad value":   `m{a="b"} x`,
		"unquoted":    `m{a=b} 1`,
		"label no eq": `m{a} 1`,
		"open quote":  `m{a="b} 1`,
		"bad escape":  `m{a="\q"} 1`,
	} {
		if _, err := SumBy(bad, "m", func(map[string]string) string { return "" }); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestCountsSubAndString(t *testing.T) {
	after := Counts{"a": 10, "b": 3, "c": 3, "same": 4}
	before := Counts{"a": 4, "same": 4}
	diff := after.Sub(before)
	if fmt.Sprint(diff) != fmt.Sprint(Counts{"a": 6, "b": 3, "c": 3}) {
		t.Errorf("Sub = %v", diff)
	}
	want := "       6 a\n       3 b\n       3 c\n"
	if diff.String() != want {
		t.Errorf("String =\n%s\nwant\n%s", diff.String(), want)
	}
}

func TestReconciles(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, strings.Join([]string{
			`plinth_reconcile_total{controller="tenantcompute",result="success"} 1200`,
			`plinth_reconcile_total{controller="tenantcompute",result="conflict"} 3`,
			`plinth_reconcile_duration_seconds_count{controller="tenantcompute"} 1203`,
			`plinth_reconcile_duration_seconds_sum{controller="tenantcompute"} 250.5`,
			`plinth_reconcile_duration_seconds_sum{controller="workload"} 2`,
		}, "\n"))
	}))
	defer srv.Close()
	got, err := Reconciles(context.Background(), srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint(Counts{"tenantcompute success": 1200, "tenantcompute conflict": 3}) {
		t.Errorf("got %v", got)
	}
	seconds, err := ReconcileSeconds(context.Background(), srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(seconds) != fmt.Sprint(Counts{"tenantcompute": 250.5, "workload": 2}) {
		t.Errorf("seconds %v", seconds)
	}
	if _, err := Reconciles(context.Background(), srv.URL+"/nothing"); err == nil {
		t.Error("no error for a 404")
	}
	if _, err := ReconcileSeconds(context.Background(), srv.URL+"/nothing"); err == nil {
		t.Error("no error for a 404")
	}
}
