package kubernetes

import (
	"errors"
	"sync"
	"testing"
	"time"
)

// A first provision creates the namespace without asking the cluster for it first: a create of
// one that exists fails and createNamespace reads that one (TestNamespaceCreatedMeanwhile), so
// the read would be one more request in a row for every new tenant.
func TestFirstProvisionSendsNoNamespaceRead(t *testing.T) {
	f := newFixture(t, nil)
	provision(t, f.provider, tenantCompute())
	for _, a := range f.kube.Actions() {
		if a.GetVerb() == "get" && a.GetResource().Resource == "namespaces" {
			t.Errorf("Provision read the namespace before creating it: %v", f.kube.Actions())
		}
	}
}

func TestConcurrentlyRunsTheStepsAtOnce(t *testing.T) {
	// Each step waits until all have started: one after the other, the first would wait forever.
	const n = 4
	var started sync.WaitGroup
	started.Add(n)
	all := make(chan struct{})
	go func() { started.Wait(); close(all) }()
	step := func() error {
		started.Done()
		select {
		case <-all:
			return nil
		case <-time.After(5 * time.Second):
			return errors.New("the other steps did not start")
		}
	}
	if err := concurrently(step, step, step, step); err != nil {
		t.Fatal(err)
	}
}

func TestConcurrentlyReturnsTheFirstStepsError(t *testing.T) {
	first, second := errors.New("first"), errors.New("second")
	release := make(chan struct{})
	err := concurrently(
		func() error { return nil },
		func() error { <-release; return first }, // fails last, but comes first
		func() error { defer close(release); return second },
	)
	if err != first {
		t.Errorf("got %v, want the error of the first failing step in order", err)
	}
	if err := concurrently(); err != nil {
		t.Errorf("no steps: %v", err)
	}
}
