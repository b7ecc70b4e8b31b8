package delivery

import "testing"

func TestSameRevision(t *testing.T) {
	const d = "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
	const other = "sha256:60303ae22b998861bce3b28f33eec1be758a213c86c93c076dbe9f558c11c752"
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"1.0.0@" + d, "1.0.0@" + d, true},
		{"1.0.0@" + d, d, true}, // Flux pinned to the digest reports it alone
		{d, "latest@" + d, true},
		{"1.0.0@" + d, "1.0.0@" + other, false},
		{"1.0.0@" + d, other, false},
		{"", "", true},
		{"", d, false},
		{"1.0.0", "1.0.0", true},
		{"1.0.0", "1.0.0@" + d, false},
		{"a@b", "c@b", false}, // not digests
	} {
		if got := SameRevision(tc.a, tc.b); got != tc.want {
			t.Errorf("SameRevision(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
		if got := SameRevision(tc.b, tc.a); got != tc.want {
			t.Errorf("SameRevision(%q, %q) = %v, want %v", tc.b, tc.a, got, tc.want)
		}
	}
}
