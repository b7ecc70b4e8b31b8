package localplatform

import (
	"context"
	"testing"
)

func TestHolderPID(t *testing.T) {
	for identity, want := range map[string]int{"host_42": 42, "my_host_7": 7, "host": 0, "host_": 0, "host_x": 0, "host_-3": 0, "": 0} {
		got, ok := holderPID(identity)
		if got != want && ok || ok != (want != 0) {
			t.Errorf("holderPID(%q) = %d, %v; want %d", identity, got, ok, want)
		}
	}
}

func TestKillComponentRefusesUnknownAndStoppedComponents(t *testing.T) {
	p := &Platform{}
	if _, err := p.KillComponent("etcd"); err == nil {
		t.Error("killing a component that does not run succeeded")
	}
	if _, err := p.KillComponent("no-such-thing"); err == nil {
		t.Error("killing an unknown component succeeded")
	}
	if _, err := p.WaitComponentBack(context.Background(), "no-such-thing", 1); err == nil {
		t.Error("waiting for an unknown component succeeded")
	}
	if pid := p.ComponentPID("etcd"); pid != 0 {
		t.Errorf("ComponentPID of a component that does not run = %d", pid)
	}
}
