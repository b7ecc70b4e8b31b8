package compute

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
)

type fakeRuntime struct {
	name     string
	released []string
}

func (f *fakeRuntime) Name() string { return f.name }
func (f *fakeRuntime) Apply(context.Context, *v1b1.WorkloadPlan, map[string]*v1b1.ResourceBinding) (Status, error) {
	return Status{}, nil
}
func (f *fakeRuntime) Release(namespace, name string) {
	f.released = append(f.released, namespace+"/"+name)
}

// fakeProvider is a Provider by name only; the registry calls nothing else.
type fakeProvider struct {
	Provider
	name string
}

func (f fakeProvider) Name() string { return f.name }

func TestRegistry(t *testing.T) {
	r := NewRegistry()
	kubeRuntime := &fakeRuntime{name: "kubernetes"}
	kubeProvider := fakeProvider{name: "kubernetes"}
	for _, e := range []Entry{
		{Name: "kubernetes", Runtime: kubeRuntime, Provider: kubeProvider},
		{Name: "kubevirt", Provider: fakeProvider{name: "kubevirt"}},
		{Name: "docker", Runtime: &fakeRuntime{name: "docker"}},
		{Name: "aws-ecs", Provider: fakeProvider{name: "aws-ecs"}},
	} {
		if err := r.Register(e); err != nil {
			t.Fatalf("Register(%s): %v", e.Name, err)
		}
	}

	if rt, ok := r.Runtime("kubernetes"); !ok || rt != kubeRuntime {
		t.Errorf("Runtime(kubernetes) = %v, %v", rt, ok)
	}
	if p, ok := r.Provider("kubernetes"); !ok || p != kubeProvider {
		t.Errorf("Provider(kubernetes) = %v, %v", p, ok)
	}
	if _, ok := r.Runtime("kubevirt"); ok {
		t.Error("kubevirt is a tenant-compute provider only, yet has a runtime")
	}
	if _, ok := r.Provider("docker"); ok {
		t.Error("docker is a runtime only, yet has a tenant-compute provider")
	}
	if _, ok := r.Runtime("nomad"); ok {
		t.Error("an unregistered name has a runtime")
	}
	var names []string
	for _, p := range r.Providers() {
		names = append(names, p.Name())
	}
	if want := []string{"aws-ecs", "kubernetes", "kubevirt"}; !reflect.DeepEqual(names, want) {
		t.Errorf("Providers() = %v, want %v (sorted, tenant-compute providers only)", names, want)
	}

	names = nil
	for _, rt := range r.Runtimes() {
		names = append(names, rt.Name())
	}
	if want := []string{"docker", "kubernetes"}; !reflect.DeepEqual(names, want) {
		t.Errorf("Runtimes() = %v, want %v (sorted, runtimes only)", names, want)
	}

	r.Release("team-a", "shop")
	if want := []string{"team-a/shop"}; !reflect.DeepEqual(kubeRuntime.released, want) {
		t.Errorf("released %v, want %v", kubeRuntime.released, want)
	}
}

func TestRegistryRefuses(t *testing.T) {
	for name, tc := range map[string]struct {
		first  *Entry
		second Entry
		dup    bool
	}{
		"duplicate provider names are rejected": {
			first:  &Entry{Name: "kubernetes", Provider: fakeProvider{name: "kubernetes"}},
			second: Entry{Name: "kubernetes", Provider: fakeProvider{name: "kubernetes"}},
			dup:    true,
		},
		"a runtime and a provider of one name registered apart are duplicates": {
			first:  &Entry{Name: "kubernetes", Runtime: &fakeRuntime{name: "kubernetes"}},
			second: Entry{Name: "kubernetes", Provider: fakeProvider{name: "kubernetes"}},
			dup:    true,
		},
		"no name":                        {second: Entry{Provider: fakeProvider{}}},
		"neither runtime nor provider":   {second: Entry{Name: "empty"}},
		"runtime named otherwise":        {second: Entry{Name: "a", Runtime: &fakeRuntime{name: "b"}}},
		"provider named otherwise":       {second: Entry{Name: "a", Provider: fakeProvider{name: "b"}}},
		"half of a pair named otherwise": {second: Entry{Name: "a", Runtime: &fakeRuntime{name: "a"}, Provider: fakeProvider{name: "b"}}},
	} {
		t.Run(name, func(t *testing.T) {
			r := NewRegistry()
			if tc.first != nil {
				if err := r.Register(*tc.first); err != nil {
					t.Fatal(err)
				}
			}
			err := r.Register(tc.second)
			if err == nil {
				t.Fatal("registered")
			}
			if got := errors.Is(err, ErrDuplicateName); got != tc.dup {
				t.Errorf("errors.Is(%v, ErrDuplicateName) = %v, want %v", err, got, tc.dup)
			}
			if tc.first == nil && (len(r.Providers()) > 0 || len(r.entries) > 0) {
				t.Error("a refused entry was kept")
			}
			if tc.first != nil {
				if p, _ := r.Provider("kubernetes"); tc.first.Provider == nil && p != nil {
					t.Error("the refused entry replaced the first")
				}
			}
		})
	}
}
