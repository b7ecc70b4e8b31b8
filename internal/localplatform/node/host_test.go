package node

import (
	"reflect"
	"testing"
)

// TestSplitRule: a rule of iptables -S comes apart into the arguments that delete it, with
// the bridge plugin's quoted comment as one argument.
func TestSplitRule(t *testing.T) {
	for line, want := range map[string][]string{
		`-N KUBE-KUBELET-CANARY`: {"-N", "KUBE-KUBELET-CANARY"},
		`-A POSTROUTING -s 10.251.0.5/32 -m comment --comment "name: \"plinth-pods\" id: \"abc\"" -j CNI-0123`: {
			"-A", "POSTROUTING", "-s", "10.251.0.5/32", "-m", "comment", "--comment", `name: "plinth-pods" id: "abc"`, "-j", "CNI-0123"},
		`-A INPUT -j KUBE-FIREWALL`: {"-A", "INPUT", "-j", "KUBE-FIREWALL"},
		``:                          nil,
	} {
		got := splitRule(line)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("splitRule(%q) = %q, want %q", line, got, want)
		}
		if len(got) > 2 && got[0] == "-A" {
			if target := jumpTarget(got); !ours(target) {
				t.Errorf("%q jumps to %q, not one of the node's chains", line, target)
			}
		}
	}
	if ours("DOCKER-USER") || ours("POSTROUTING") {
		t.Error("chains the node did not make are taken as its own")
	}
}

// TestUnescapeMount: mount points with spaces are escaped in mountinfo.
func TestUnescapeMount(t *testing.T) {
	if got := unescapeMount(`/var/lib/plinth-node/a\040b`); got != "/var/lib/plinth-node/a b" {
		t.Errorf("got %q", got)
	}
}
