// Package version says which build of Plinth a binary is: the release and source revision the
// image build stamps into it (make images, -ldflags -X), or else what Go recorded from the
// checkout.
// It is Plinth's own on purpose: k8s.io/component-base/version is the Kubernetes version the
// libraries emulate (plinth-apiserver's effective version and feature gates follow it), so
// Plinth's release must not be written there.
package version

import (
	"fmt"
	"runtime/debug"
)

// release and revision are set at link time:
// -X github.com/plinth-dev/plinth/pkg/version.release=v0.4.0 and ….revision=<commit>. The
// revision is stamped because Go records none with -buildvcs=false, or outside a checkout.
var release, revision string

// Info is a binary's build.
type Info struct {
	// Release is the version the build was stamped with; "devel" when none was.
	Release string
	// Revision is the source commit the binary was built from, empty when it was neither
	// stamped nor recorded by Go.
	Revision string
	// Modified says the checkout had uncommitted changes.
	Modified bool
}

// Get is this binary's build.
func Get() Info {
	info := Info{Release: release, Revision: revision}
	if info.Release == "" {
		info.Release = "devel"
	}
	if bi, ok := debug.ReadBuildInfo(); ok && info.Revision == "" {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				info.Revision = s.Value
			case "vcs.modified":
				info.Modified = s.Value == "true"
			}
		}
	}
	return info
}

// String is the release, then the revision when known: "v0.4.0 (3f2c…, modified)".
func (i Info) String() string {
	switch {
	case i.Revision == "":
		return i.Release
	case i.Modified:
		return fmt.Sprintf("%s (%s, modified)", i.Release, i.Revision)
	}
	return fmt.Sprintf("%s (%s)", i.Release, i.Revision)
}
