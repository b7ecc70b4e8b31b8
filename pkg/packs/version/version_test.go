package version

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Version
	}{
		{"v0.0.0", Version{}},
		{"v1.2.3", Version{1, 2, 3, 0}},
		{"v1.2.3-r4", Version{1, 2, 3, 4}},
		{"v10.20.30-r40", Version{10, 20, 30, 40}},
		{"v1.0.0-r1", Version{1, 0, 0, 1}},
		{"v18446744073709551615.0.0", Version{Major: 1<<64 - 1}},
		{"v0.0.18446744073709551615-r18446744073709551615", Version{Patch: 1<<64 - 1, Revision: 1<<64 - 1}},
	} {
		got, err := Parse(tc.in)
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.in, err)
			continue
		}
		if got != tc.want {
			t.Errorf("Parse(%q) = %+v, want %+v", tc.in, got, tc.want)
		}
		if s := got.String(); s != tc.in {
			t.Errorf("Parse(%q).String() = %q", tc.in, s)
		}
	}
}

func TestParseRefuses(t *testing.T) {
	for _, in := range []string{
		"",
		"v",
		"1.2.3",                     // missing v
		"V1.2.3",                    // upper-case V
		" v1.2.3",                   // space
		"v1.2.3 ",                   // space
		"v1.2",                      // two numbers
		"v1",                        // one number
		"v1.2.3.4",                  // four numbers
		"v1..3",                     // empty number
		"v1.2.",                     // empty number
		"v.1.2",                     // empty number
		"v01.2.3",                   // leading zero
		"v1.02.3",                   // leading zero
		"v1.2.03",                   // leading zero
		"v1.2.3-r04",                // leading zero in the revision
		"v1.2.3-r0",                 // revision 0 is v1.2.3
		"v-1.2.3",                   // negative
		"v1.-2.3",                   // negative
		"v1.2.-3",                   // negative
		"v1.2.3-r-1",                // negative revision
		"v+1.2.3",                   // sign
		"v1.2.3-r+1",                // sign
		"v1.2.3-r",                  // revision without number
		"v1.2.3-",                   // dangling dash
		"v1.2.3-rc1",                // pre-release
		"v1.2.3-alpha",              // pre-release
		"v1.2.3+build",              // build metadata
		"v1.2.3-r1+b",               // build metadata after a revision
		"v1.2.3-r1-r2",              // two revisions
		"v1.2.3r1",                  // revision without dash
		"v1.2.3-R1",                 // upper-case R
		"v1_0.2.3",                  // underscore
		"v0x1.2.3",                  // hexadecimal
		"v1.2.3-r0x1",               // hexadecimal revision
		"v１.2.3",                    // not an ASCII digit
		"v18446744073709551616.0.0", // beyond 64 bits
		"v1.2.3-r18446744073709551616",
		"latest",
	} {
		v, err := Parse(in)
		if err == nil {
			t.Errorf("Parse(%q) = %+v, want an error", in, v)
			continue
		}
		if err.Error() != errSyntax.Error() {
			t.Errorf("Parse(%q) error %q, want %q", in, err, errSyntax)
		}
	}
}

// TestParseError checks that the error is one neutral sentence that states the expected form,
// the detail of admission's field error.
func TestParseError(t *testing.T) {
	_, err := Parse("1.2")
	msg := err.Error()
	for _, want := range []string{"vX.Y.Z", "vX.Y.Z-rN", "leading zeros", "v1.4.0-r2"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not mention %q", msg, want)
		}
	}
	if strings.Contains(msg, "1.2:") || strings.Count(msg, ". ") > 0 || strings.HasSuffix(msg, ".") {
		t.Errorf("error %q is not one sentence without the input and final stop", msg)
	}
}

func TestString(t *testing.T) {
	for _, tc := range []struct {
		v    Version
		want string
	}{
		{Version{}, "v0.0.0"},
		{Version{1, 2, 3, 0}, "v1.2.3"},
		{Version{1, 2, 3, 1}, "v1.2.3-r1"},
		{Version{1<<64 - 1, 1<<64 - 1, 1<<64 - 1, 1<<64 - 1}, "v18446744073709551615.18446744073709551615.18446744073709551615-r18446744073709551615"},
	} {
		if got := tc.v.String(); got != tc.want {
			t.Errorf("%+v.String() = %q, want %q", tc.v, got, tc.want)
		}
	}
}

func TestCompare(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"v1.0.0", "v1.0.0", 0},
		{"v1.0.0-r2", "v1.0.0-r2", 0},
		{"v1.0.0", "v1.0.0-r1", -1}, // no revision is revision 0
		{"v1.0.0-r2", "v1.0.0-r1", 1},
		{"v1.0.0-r10", "v1.0.0-r9", 1}, // numbers, not text
		{"v1.0.1", "v1.0.0-r9", 1},     // patch before revision
		{"v1.1.0", "v1.0.9", 1},
		{"v2.0.0", "v1.99.99-r99", 1},
		{"v1.10.0", "v1.9.0", 1},
		{"v0.0.1", "v0.1.0", -1},
	} {
		a, b := must(t, tc.a), must(t, tc.b)
		if got := a.Compare(b); got != tc.want {
			t.Errorf("%s.Compare(%s) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
		if got := b.Compare(a); got != -tc.want {
			t.Errorf("%s.Compare(%s) = %d, want %d", tc.b, tc.a, got, -tc.want)
		}
	}
}

func TestDirectionOf(t *testing.T) {
	for _, tc := range []struct {
		previous, next string
		want           Direction
	}{
		{"", "v1.0.0", DirectionInitial},
		{"", "v0.0.0", DirectionInitial},
		{"v1.0.0", "v1.0.0", DirectionRedeploy},
		{"v1.0.0-r2", "v1.0.0-r2", DirectionRedeploy},
		{"v1.0.0", "v1.1.0", DirectionUpgrade},
		{"v1.0.0", "v1.0.0-r2", DirectionUpgrade}, // a revision bump alone
		{"v1.0.0-r1", "v1.0.0-r2", DirectionUpgrade},
		{"v1.1.0", "v1.0.0", DirectionRollback},
		{"v1.0.0-r2", "v1.0.0", DirectionRollback},
		{"v2.0.0", "v1.9.9-r9", DirectionRollback},
	} {
		var previous *Version
		if tc.previous != "" {
			p := must(t, tc.previous)
			previous = &p
		}
		if got := DirectionOf(previous, must(t, tc.next)); got != tc.want {
			t.Errorf("DirectionOf(%q, %q) = %s, want %s", tc.previous, tc.next, got, tc.want)
		}
	}
}

// TestDirectionValues pins the values to the seed's upgradeDirection enum.
func TestDirectionValues(t *testing.T) {
	got := []Direction{DirectionInitial, DirectionUpgrade, DirectionRollback, DirectionRedeploy}
	want := []string{"Initial", "Upgrade", "Rollback", "Redeploy"}
	for i := range got {
		if string(got[i]) != want[i] {
			t.Errorf("direction %d is %q, want %q", i, got[i], want[i])
		}
	}
}

// FuzzParse checks that whatever Parse accepts, String gives back unchanged, and that a
// version's String always parses back to it.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"v0.0.0", "v1.2.3", "v1.2.3-r4", "v01.2.3", "v1.2.3-r0", "1.2.3", "v1.2.3-rc1", "v18446744073709551616.0.0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := Parse(s)
		if err != nil {
			return
		}
		if got := v.String(); got != s {
			t.Fatalf("Parse(%q).String() = %q", s, got)
		}
		back, err := Parse(v.String())
		if err != nil || back != v {
			t.Fatalf("Parse(%q) = %+v, %v; want %+v", v.String(), back, err, v)
		}
	})
}

func must(t *testing.T, s string) Version {
	t.Helper()
	v, err := Parse(s)
	if err != nil {
		t.Fatalf("Parse(%q): %v", s, err)
	}
	return v
}
