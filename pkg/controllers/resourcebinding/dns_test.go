package resourcebinding

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

// A dns resource's host is unique per namespace: the same binding name in two namespaces, or two
// namespace and binding names that join into the same text, get different hosts, each one DNS
// label under the domain, the same on every reconcile.
func TestDNSHostsAreUniquePerNamespace(t *testing.T) {
	dns := Builtins(Env{DNSDomain: "apps.example.com"})["dns"]
	host := func(namespace, name string) string {
		t.Helper()
		b := binding("")
		b.Namespace, b.Name, b.Spec.Type = namespace, name, "dns"
		res, err := dns.Provision(context.Background(), b)
		if err != nil || !res.Ready {
			t.Fatalf("Provision %s/%s: %+v, %v", namespace, name, res, err)
		}
		h := res.Values["host"]
		label, domain, _ := strings.Cut(h, ".")
		if domain != "apps.example.com" {
			t.Errorf("host %q is not one label under the domain", h)
		}
		if errs := validation.IsDNS1123Label(label); len(errs) > 0 {
			t.Errorf("host %q: %v", h, errs)
		}
		return h
	}
	long := strings.Repeat("w", 40) + "-dns"
	pairs := [][2][2]string{
		{{"team-a", "web-dns"}, {"team-b", "web-dns"}},
		{{"c", "a-b"}, {"b-c", "a"}},
		// Cut to the same readable text: the hash still tells them apart.
		{{strings.Repeat("n", 63), long}, {strings.Repeat("n", 62) + "m", long}},
		{{"team-a", long + "x"}, {"team-a", long + "y"}},
	}
	for _, p := range pairs {
		a, b := host(p[0][0], p[0][1]), host(p[1][0], p[1][1])
		if a == b {
			t.Errorf("%s/%s and %s/%s both get %s", p[0][0], p[0][1], p[1][0], p[1][1], a)
		}
	}
	if a, b := host("team-a", "web-dns"), host("team-a", "web-dns"); a != b {
		t.Errorf("host not stable: %s, then %s", a, b)
	}
	if h := host("team-a", "web-dns"); !strings.HasPrefix(h, "web-dns-team-a-") {
		t.Errorf("host %q does not show the binding and namespace", h)
	}
	if h := host(strings.Repeat("n", 63), strings.Repeat("b", 63)); len(h) != 63+len(".apps.example.com") {
		t.Errorf("host %q: a label cut to the limit is 63 characters", h)
	}
}
