package table

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/plinth-dev/plinth/pkg/apis/score"
)

var workloads = New([]Column{
	{Name: "Runtime", Type: "string"},
	{Name: "Endpoint", Type: "string", Wide: true},
}, func(w *score.Workload) []interface{} {
	return []interface{}{OrNone(w.Spec.RuntimeClass), "x"}
})

func workload(name string, created time.Time) score.Workload {
	return score.Workload{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: "7", CreationTimestamp: metav1.NewTime(created)}}
}

func cells(rows []metav1.TableRow) [][]interface{} {
	var out [][]interface{}
	for _, r := range rows {
		out = append(out, r.Cells)
	}
	return out
}

func TestColumns(t *testing.T) {
	table, err := workloads.ConvertToTable(context.Background(), &score.WorkloadList{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range table.ColumnDefinitions {
		got = append(got, fmt.Sprintf("%s/%s/%d", c.Name, c.Type, c.Priority))
	}
	want := []string{"Name/string/0", "Runtime/string/0", "Endpoint/string/1", "Age/date/0"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("columns (-want +got):\n%s", diff)
	}

	table, err = workloads.ConvertToTable(context.Background(), &score.WorkloadList{}, &metav1.TableOptions{NoHeaders: true})
	if err != nil {
		t.Fatal(err)
	}
	if table.ColumnDefinitions != nil {
		t.Errorf("NoHeaders still sent %d columns", len(table.ColumnDefinitions))
	}
}

func TestRows(t *testing.T) {
	list := &score.WorkloadList{
		ListMeta: metav1.ListMeta{ResourceVersion: "42", Continue: "next"},
		Items:    []score.Workload{workload("a", time.Now().Add(-5*time.Minute)), workload("b", time.Time{})},
	}
	list.Items[0].Spec.RuntimeClass = "deployment"
	table, err := workloads.ConvertToTable(context.Background(), list, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]interface{}{{"a", "deployment", "x", "5m"}, {"b", "<none>", "x", "<unknown>"}}
	if diff := cmp.Diff(want, cells(table.Rows)); diff != "" {
		t.Errorf("rows (-want +got):\n%s", diff)
	}
	if table.ResourceVersion != "42" || table.Continue != "next" {
		t.Errorf("list metadata: resourceVersion %q, continue %q", table.ResourceVersion, table.Continue)
	}
	if table.Rows[1].Object.Object != &list.Items[1] {
		t.Errorf("row does not carry its object")
	}

	one := workload("c", time.Now().Add(-3*24*time.Hour))
	table, err = workloads.ConvertToTable(context.Background(), &one, nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([][]interface{}{{"c", "<none>", "x", "3d"}}, cells(table.Rows)); diff != "" {
		t.Errorf("single object (-want +got):\n%s", diff)
	}
	if table.ResourceVersion != "7" {
		t.Errorf("resourceVersion %q, want the object's", table.ResourceVersion)
	}
}

func TestWrongKind(t *testing.T) {
	_, err := workloads.ConvertToTable(context.Background(), &score.WorkloadPlan{}, nil)
	if err == nil || !strings.Contains(err.Error(), "unexpected object type") {
		t.Errorf("want an unexpected type error, got %v", err)
	}
}
