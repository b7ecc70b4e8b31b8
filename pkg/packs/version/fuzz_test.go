package version

import "testing"

// FuzzVersion checks Parse on arbitrary pairs of strings: no panic; a version it accepts has
// exactly one spelling (String gives back the input); and Compare and DirectionOf order two
// versions consistently.
func FuzzVersion(f *testing.F) {
	for _, pair := range [][2]string{
		{"v1.2.0", "v1.2.0-r1"}, {"v1.4.0", "v1.3.9"}, {"v0.0.0", "v0.0.0"}, {"v1.0.0-r0", "v01.0.0"},
		{"v18446744073709551615.0.0", "v18446744073709551616.0.0"}, {"1.2.3", "v1.2.3-rc.1"}, {"v1.2", "v1.2.3.4"},
		{"v1.2.3-r", "v1.2.3-r-1"}, {"v+1.2.3", "v1.2.3+build"},
	} {
		f.Add(pair[0], pair[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		va, errA := Parse(a)
		vb, errB := Parse(b)
		if errA != nil {
			if errA.Error() == "" {
				t.Errorf("Parse(%q) fails without a message", a)
			}
			return
		}
		if va.String() != a {
			t.Errorf("Parse(%q).String() = %q: a version has one spelling", a, va.String())
		}
		if back, err := Parse(va.String()); err != nil || back != va {
			t.Errorf("%q does not read back: %v, %v", va.String(), back, err)
		}
		if DirectionOf(nil, va) != DirectionInitial {
			t.Errorf("a first delivery of %s is not Initial", va)
		}
		if errB != nil {
			return
		}
		ab, ba := va.Compare(vb), vb.Compare(va)
		if ab != -ba || (ab == 0) != (va == vb) {
			t.Errorf("Compare(%s, %s) = %d, reverse %d", va, vb, ab, ba)
		}
		want := map[int]Direction{1: DirectionUpgrade, -1: DirectionRollback, 0: DirectionRedeploy}[vb.Compare(va)]
		if got := DirectionOf(&va, vb); got != want {
			t.Errorf("DirectionOf(%s, %s) = %s, want %s", va, vb, got, want)
		}
	})
}
