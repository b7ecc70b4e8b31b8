package provisioners

import (
	"fmt"
	"testing"

	"k8s.io/utils/ptr"

	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
)

func entry(t *testing.T, name string, source Source, typ string, class, id *string) Entry {
	return Entry{Name: name, Source: source, Template: mustCompile(t, v1b1.ProvisionerSpec{
		URI: "template://test/" + name, Type: typ, Class: class, ID: id})}
}

func TestSetMatch(t *testing.T) {
	set := NewSet(
		entry(t, "any", SourceBuiltIn, "postgres", nil, nil),
		entry(t, "large", SourceBuiltIn, "postgres", ptr.To("large"), nil),
		entry(t, "default-class", SourceBuiltIn, "postgres", ptr.To("default"), nil),
		entry(t, "shared", SourceBuiltIn, "postgres", nil, ptr.To("shared-db")),
		entry(t, "shared-large", SourceBuiltIn, "postgres", ptr.To("large"), ptr.To("shared-db")),
		entry(t, "redis-any", SourceBuiltIn, "redis", nil, nil),
		entry(t, "redis-obj", SourceObject, "redis", nil, nil),
		entry(t, "redis-file", SourceConfigFile, "redis", nil, nil),
		entry(t, "dns-b", SourceConfigFile, "dns", nil, nil),
		entry(t, "dns-a", SourceConfigFile, "dns", nil, nil),
		entry(t, "mq-class-obj", SourceObject, "amqp", ptr.To("fast"), nil),
		entry(t, "mq-id-builtin", SourceBuiltIn, "amqp", nil, ptr.To("web.mq")),
		Entry{Name: "no-template", Source: SourceObject},
	)
	cases := []struct{ typ, class, id, want string }{
		{"postgres", "", "web.db", "default-class"},        // no class is class default
		{"postgres", "default", "web.db", "default-class"}, // same
		{"postgres", "large", "web.db", "large"},           // class beats type alone
		{"postgres", "small", "web.db", "any"},             // nothing narrower fits
		{"postgres", "small", "shared-db", "shared"},       // id beats type alone
		{"postgres", "default", "shared-db", "shared"},     // id beats class
		{"postgres", "large", "shared-db", "shared-large"}, // class and id beat id
		{"redis", "", "web.cache", "redis-obj"},            // objects beat the file beat built-ins
		{"dns", "", "web.dns", "dns-a"},                    // then names
		{"amqp", "fast", "web.mq", "mq-id-builtin"},        // specificity before source
		{"amqp", "fast", "web.other", "mq-class-obj"},
		{"amqp", "slow", "web.other", ""},
		{"mysql", "", "web.db", ""},
	}
	for _, tc := range cases {
		got := set.Match(tc.typ, tc.class, tc.id)
		name := ""
		if got != nil {
			name = got.Name
		}
		if name != tc.want {
			t.Errorf("Match(%q, %q, %q) = %q, want %q", tc.typ, tc.class, tc.id, name, tc.want)
		}
	}
}

func TestSetList(t *testing.T) {
	set := NewSet(
		entry(t, "b", SourceBuiltIn, "redis", nil, nil),
		entry(t, "a", SourceObject, "redis", nil, nil),
		entry(t, "c", SourceBuiltIn, "amqp", nil, nil),
	)
	list := set.List()
	var names []string
	for _, e := range list {
		names = append(names, e.Name)
	}
	if got := fmt.Sprint(names); got != "[c a b]" {
		t.Errorf("List() = %s, want [c a b]", got)
	}
	list[0].Name = "changed"
	if set.List()[0].Name != "c" {
		t.Error("List() gave the Set's own entries")
	}
	if NewSet().Match("redis", "", "x") != nil || len(NewSet().List()) != 0 {
		t.Error("an empty Set matched")
	}
}

func TestSourceString(t *testing.T) {
	for s, want := range map[Source]string{SourceObject: "object", SourceConfigFile: "config-file", SourceBuiltIn: "built-in", Source(9): "Source(9)"} {
		if s.String() != want {
			t.Errorf("%d.String() = %q, want %q", int(s), s.String(), want)
		}
	}
}
