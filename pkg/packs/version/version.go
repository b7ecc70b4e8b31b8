// Package version reads the versions of infrastructure packs, vX.Y.Z or vX.Y.Z-rN, and tells
// which way a delivery goes from one version to another: packs compare as
// [major, minor, patch, revision], a version without a revision being revision 0, so that a
// repackaging of the same release (v1.2.0 → v1.2.0-r1) is an upgrade.
package version

import (
	"cmp"
	"errors"
	"strconv"
	"strings"
)

// errSyntax is Parse's one error. It reads as the detail of a field error, which is where
// admission reports it, and names the form rather than the fault: a version that breaks the
// form in several places gets one answer that fixes all of them.
var errSyntax = errors.New("must be vX.Y.Z or vX.Y.Z-rN: decimal numbers without leading zeros and a revision N from 1, for example v1.4.0 or v1.4.0-r2")

// Version is a pack version. The zero value is v0.0.0.
type Version struct {
	// Major, Minor and Patch are the release's version.
	Major, Minor, Patch uint64
	// Revision counts repackagings of the same release; 0 is the release itself.
	Revision uint64
}

// Parse reads a pack version: "v" and three dot-separated decimal numbers, optionally followed
// by "-r" and a revision number. Numbers have no leading zeros and no sign, and a revision is at
// least 1, so that every version has exactly one spelling (v1.0.0-r0 would be a second one of
// v1.0.0) and String gives back what Parse read. Anything else, including semver's
// pre-release and build suffixes, is refused.
func Parse(s string) (Version, error) {
	rest, ok := strings.CutPrefix(s, "v")
	if !ok {
		return Version{}, errSyntax
	}
	release, revision, hasRevision := strings.Cut(rest, "-r")
	parts := strings.Split(release, ".")
	if len(parts) != 3 {
		return Version{}, errSyntax
	}
	var v Version
	for i, dst := range []*uint64{&v.Major, &v.Minor, &v.Patch} {
		n, ok := number(parts[i])
		if !ok {
			return Version{}, errSyntax
		}
		*dst = n
	}
	if hasRevision {
		n, ok := number(revision)
		if !ok || n == 0 {
			return Version{}, errSyntax
		}
		v.Revision = n
	}
	return v, nil
}

// number reads a decimal number without sign or leading zeros that fits in 64 bits.
func number(s string) (uint64, bool) {
	if len(s) > 1 && s[0] == '0' {
		return 0, false
	}
	// In base 10 ParseUint takes digits only: no sign, no underscores, no space.
	n, err := strconv.ParseUint(s, 10, 64)
	return n, err == nil
}

// String is the version as Parse reads it: vX.Y.Z, with -rN when the revision is not 0.
func (v Version) String() string {
	b := make([]byte, 0, 24)
	b = append(b, 'v')
	b = strconv.AppendUint(b, v.Major, 10)
	b = append(b, '.')
	b = strconv.AppendUint(b, v.Minor, 10)
	b = append(b, '.')
	b = strconv.AppendUint(b, v.Patch, 10)
	if v.Revision != 0 {
		b = append(b, "-r"...)
		b = strconv.AppendUint(b, v.Revision, 10)
	}
	return string(b)
}

// Compare is -1 when v is older than o, 0 when they are the same version and +1 when v is
// newer, comparing major, minor, patch and revision in that order.
func (v Version) Compare(o Version) int {
	return cmp.Or(
		cmp.Compare(v.Major, o.Major),
		cmp.Compare(v.Minor, o.Minor),
		cmp.Compare(v.Patch, o.Patch),
		cmp.Compare(v.Revision, o.Revision),
	)
}

// Direction is the direction of a delivery from one pack version to the next. Its values are
// those of an InfrastructurePackInstance's status.upgradeDirection.
type Direction string

const (
	// DirectionInitial is the first delivery: there is no previous version.
	DirectionInitial Direction = "Initial"
	// DirectionUpgrade is a delivery of a newer version, a revision bump alone included.
	DirectionUpgrade Direction = "Upgrade"
	// DirectionRollback is a delivery of an older version.
	DirectionRollback Direction = "Rollback"
	// DirectionRedeploy is a delivery of the same version again.
	DirectionRedeploy Direction = "Redeploy"
)

// DirectionOf is the direction of a delivery of next after previous, nil when nothing was
// delivered before.
func DirectionOf(previous *Version, next Version) Direction {
	if previous == nil {
		return DirectionInitial
	}
	switch next.Compare(*previous) {
	case 1:
		return DirectionUpgrade
	case -1:
		return DirectionRollback
	default:
		return DirectionRedeploy
	}
}
