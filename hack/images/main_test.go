package main

import (
	"strings"
	"testing"
)

func TestParsePlatformsRefusesWhatIsNotLinux(t *testing.T) {
	if got, err := parsePlatforms("linux/amd64, linux/arm64"); err != nil || len(got) != 2 || got[1].Architecture != "arm64" {
		t.Errorf("parsePlatforms: %+v %v", got, err)
	}
	for _, bad := range []string{"", "linux", "windows/amd64", "linux/arm/v7/x", "linux/"} {
		if _, err := parsePlatforms(bad); err == nil || !strings.Contains(err.Error(), "--platforms") {
			t.Errorf("parsePlatforms(%q) = %v", bad, err)
		}
	}
}

func TestValidReleaseRefusesWhatATagCannotCarry(t *testing.T) {
	for _, ok := range []string{"v0.4.0", "v0.0.0-20261128120000-0123456789ab", "latest"} {
		if err := validRelease(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"v0.4.0+build", "has space", "a/b", ":x", strings.Repeat("v", 129)} {
		if err := validRelease(bad); err == nil || !strings.Contains(err.Error(), "--release") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
