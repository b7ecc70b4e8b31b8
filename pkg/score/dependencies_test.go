package score

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/plinth-dev/plinth/pkg/apis/common"
	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
)

func withParams(params map[string]string) *Workload {
	w := &Workload{Resources: map[string]v1b1.ResourceSpec{}}
	for name, p := range params {
		r := v1b1.ResourceSpec{Type: "t"}
		if p != "" {
			r.Params = &common.RawObject{Raw: []byte(p)}
		}
		w.Resources[name] = r
	}
	return w
}

func TestResourceOrder(t *testing.T) {
	cases := map[string]struct {
		params map[string]string
		want   string
		cycle  string
	}{
		"independent":    {map[string]string{"b": "", "a": ""}, "a,b", ""},
		"chain":          {map[string]string{"route": `{"host":"${resources.dns.host}"}`, "dns": "", "app": `{"x":["${resources.route}"]}`}, "dns,route,app", ""},
		"escaped is not": {map[string]string{"a": `{"x":"$${resources.b.host}"}`, "b": `{"y":"${resources.a.host}"}`}, "a,b", ""},
		"cycle":          {map[string]string{"a": `{"x":"${resources.b.host}"}`, "b": `{"y":"${resources.a.host}"}`, "c": ""}, "", "a,b"},
		"self":           {map[string]string{"a": `{"x":"${resources.a.host}"}`}, "", "a"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			order, err := withParams(tc.params).ResourceOrder()
			var cycle *CycleError
			switch {
			case tc.cycle != "":
				if !errors.As(err, &cycle) || strings.Join(cycle.Resources, ",") != tc.cycle {
					t.Fatalf("err = %v, want a cycle of %s", err, tc.cycle)
				}
			case err != nil || strings.Join(order, ",") != tc.want:
				t.Fatalf("order = %v (%v), want %s", order, err, tc.want)
			}
		})
	}
}

func TestResolveParams(t *testing.T) {
	outputs := map[string]Outputs{
		"dns": {Values: map[string]string{"host": "shop.plinth.local"}},
		"db":  {Values: map[string]string{"host": "db"}, Secrets: sets.New("password")},
	}
	meta := map[string]interface{}{"name": "shop"}
	got, err := ResolveParams(&common.RawObject{Raw: []byte(`{"host":"${resources.dns.host}","paths":["/${metadata.x}"],"n":3}`)}, meta, outputs)
	if err == nil {
		t.Fatalf("a missing metadata key resolved: %s", got.Raw)
	}
	got, err = ResolveParams(&common.RawObject{Raw: []byte(`{"host":"${resources.dns.host}","port":80,"literal":"$${x}","app":"${metadata.name}"}`)}, meta, outputs)
	if err != nil || string(got.Raw) != `{"app":"shop","host":"shop.plinth.local","literal":"${x}","port":80}` {
		t.Fatalf("resolved params = %s, %v", got.Raw, err)
	}
	if _, err := ResolveParams(&common.RawObject{Raw: []byte(`{"p":"${resources.db.password}"}`)}, meta, outputs); err == nil {
		t.Fatal("a secret output was copied into params")
	}
}
