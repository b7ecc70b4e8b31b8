package ociimage

import (
	"context"
	"fmt"
	"os"
	"os/exec"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// BuildBinary builds pkg (a package or its files, as go build takes them, relative to the
// working directory) into out as a static binary for pl, the same way every time: no cgo, no
// local paths (-trimpath), no VCS stamp of Go's own (it differs with a dirty tree; callers
// stamp a revision through ldflags instead), and no GOFLAGS from the environment. tags are
// go build's -tags, empty for none; ldflags are passed as they are (hack/images strips the
// symbol table and stamps the release and revision in pkg/version). go's output goes to
// stderr.
func BuildBinary(ctx context.Context, out, pkg, tags string, pl v1.Platform, ldflags string) error {
	args := []string{"build", "-trimpath", "-buildvcs=false", "-ldflags", ldflags, "-o", out}
	if tags != "" {
		args = append(args, "-tags", tags)
	}
	cmd := exec.CommandContext(ctx, "go", append(args, pkg)...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+pl.OS, "GOARCH="+pl.Architecture, "GOFLAGS=")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("building %s for %s/%s: %w", pkg, pl.OS, pl.Architecture, err)
	}
	return nil
}
