package validation

import (
	"errors"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"

	"github.com/Masterminds/semver/v3"
	"github.com/distribution/reference"

	"github.com/plinth-dev/plinth/pkg/apis/gitops"
)

// The grammars of the OCI distribution spec come from github.com/distribution/reference, the
// package the registry itself (distribution v3) parses names with, so that what the API accepts
// is exactly what the registry serves.

// Registry ports: above the privileged range, so that plinth-controller needs no privilege to
// listen on one.
const (
	MinRegistryPort = 1024
	MaxRegistryPort = 65535
)

// ociScheme is the scheme of an OCI artifact URL, as Flux's OCIRepository spells it.
const ociScheme = "oci://"

// anchoredTag matches a whole OCI tag: [A-Za-z0-9_][A-Za-z0-9._-]{0,127}.
var anchoredTag = regexp.MustCompile(`^` + reference.TagRegexp.String() + `$`)

// anchoredDigest matches a whole digest, <algorithm>:<hex>.
var anchoredDigest = regexp.MustCompile(`^` + reference.DigestRegexp.String() + `$`)

// errEndpoint is the one sentence every malformed endpoint gets.
var errEndpoint = errors.New("must be localhost:<port>, the registry listening on this machine's loopback interface")

// parseEndpoint checks the seed's rule that an endpoint is localhost:<port> — the host
// exactly localhost (no IP address, no other name), the port written plainly (no sign, no
// leading zero) in 1024-65535 — and returns the port.
func parseEndpoint(endpoint string) (int32, error) {
	port, err := splitEndpoint(endpoint)
	if err != nil {
		return 0, err
	}
	return port, portInRange(port)
}

// splitEndpoint is parseEndpoint without the port's range.
func splitEndpoint(endpoint string) (int32, error) {
	host, port, err := net.SplitHostPort(endpoint)
	if err != nil || host != "localhost" {
		return 0, errEndpoint
	}
	n, err := strconv.ParseInt(port, 10, 32)
	if err != nil || strconv.FormatInt(n, 10) != port {
		return 0, errEndpoint
	}
	return int32(n), nil
}

func portInRange(port int32) error {
	if port < MinRegistryPort || port > MaxRegistryPort {
		return fmt.Errorf("the port must be between %d and %d", MinRegistryPort, MaxRegistryPort)
	}
	return nil
}

// ValidateOCIURL checks the seed's URL pattern: oci://<endpoint>/<repository>, optionally
// followed by :<tag>, where the endpoint is localhost:<port> and the repository a valid OCI
// repository path. It is what an OCIArtifact's status.url and a Flux OCIRepository's spec.url
// must look like; a digest is not part of either.
func ValidateOCIURL(url string) error {
	rest, ok := strings.CutPrefix(url, ociScheme)
	if !ok {
		return errors.New("must start with oci://")
	}
	host, _, ok := strings.Cut(rest, "/")
	if !ok {
		return errors.New("must be oci://localhost:<port>/<repository>, with an optional :<tag>")
	}
	if _, err := parseEndpoint(host); err != nil {
		return fmt.Errorf("the host %w", err)
	}
	ref, err := reference.Parse(rest)
	if err != nil {
		return fmt.Errorf("must be oci://localhost:<port>/<repository>, with an optional :<tag>: %w", err)
	}
	if _, digested := ref.(reference.Digested); digested {
		return errors.New("must name a tag, not a digest")
	}
	if named, ok := ref.(reference.Named); !ok || reference.Domain(named) != host {
		return errors.New("must be oci://localhost:<port>/<repository>, with an optional :<tag>")
	}
	return nil
}

// validRepository reports whether s is an OCI repository path: lowercase components of
// letters and digits joined by '.', '_', '__' or runs of '-', separated by '/', at most 255
// characters in all (workloads/app, plinth/workloads/app).
func validRepository(s string) bool {
	// reference.WithName splits a leading domain off a name; behind a fixed domain, the whole
	// of s must be the path. A ':' cannot appear in a path, so the split is unambiguous.
	const domain = "localhost:5000"
	named, err := reference.WithName(domain + "/" + s)
	return err == nil && reference.Domain(named) == domain && reference.Path(named) == s
}

// validVersion reports whether v is a semantic version, with an optional leading v (1.0.3,
// v1.2.0-rc.1, 2.0.0+build.5), or latest.
func validVersion(v string) bool {
	if v == gitops.LatestVersion {
		return true
	}
	_, err := semver.StrictNewVersion(strings.TrimPrefix(v, "v"))
	return err == nil
}
