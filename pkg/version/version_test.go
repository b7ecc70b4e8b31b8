package version

import "testing"

func TestString(t *testing.T) {
	for _, c := range []struct {
		info Info
		want string
	}{
		{Info{Release: "devel"}, "devel"},
		{Info{Release: "v0.4.0", Revision: "abc"}, "v0.4.0 (abc)"},
		{Info{Release: "v0.4.0", Revision: "abc", Modified: true}, "v0.4.0 (abc, modified)"},
	} {
		if got := c.info.String(); got != c.want {
			t.Errorf("%+v: %q, want %q", c.info, got, c.want)
		}
	}
}

func TestGetWithoutAStamp(t *testing.T) {
	if got := Get().Release; got != "devel" {
		t.Errorf("Release of an unstamped test binary = %q, want devel", got)
	}
}
