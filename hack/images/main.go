// Command images is `make images`: it builds plinth-apiserver and plinth-controller as static
// binaries and packs each into an OCI image of its own making — no Docker, no base image from
// a registry — then writes them as OCI layouts under --out and, with --repo, pushes them as
// <repo>/<name>:<release>. The same commit gives the same digests (TestImagesAreReproducible).
//
//	go run ./hack/images --repo localhost:5000/plinth --release v0.4.0
//
// A registry that needs a login takes it from IMAGE_REPO_USERNAME and IMAGE_REPO_PASSWORD, or
// else from the Docker config (~/.docker/config.json) as docker login leaves it.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/plinth-dev/plinth/internal/ociimage"
)

// binaries are the images: name, package, build tags and the description label.
var binaries = []struct{ name, pkg, tags, description string }{
	{"plinth-apiserver", "./cmd/apiserver", "", "Plinth's aggregated API server"},
	// Kustomize (through Helm) would import Go's plugin package, which needs cgo.
	{"plinth-controller", "./cmd/controller", "kustomize_disable_go_plugin_support", "Plinth's controllers"},
}

// source is the repository the labels name.
const source = "https://github.com/plinth-dev/plinth"

func main() {
	var o options
	flag.StringVar(&o.repo, "repo", "", "push the images to <repo>/<name>:<release> (empty: only write them under --out)")
	flag.StringVar(&o.out, "out", filepath.Join("_output", "images"), "directory for the binaries and the OCI layouts")
	flag.StringVar(&o.release, "release", "", "release in the tag, the version label and --version (default: v0.0.0-<commit time>-<short commit>)")
	flag.StringVar(&o.platforms, "platforms", "linux/amd64", "comma-separated os/arch the images are built for")
	flag.Parse()
	if err := run(context.Background(), o); err != nil {
		fmt.Fprintf(os.Stderr, "images: %v\n", err)
		os.Exit(1)
	}
}

type options struct {
	repo, out, release, platforms string
}

func run(ctx context.Context, o options) error {
	platforms, err := parsePlatforms(o.platforms)
	if err != nil {
		return err
	}
	rev, created, err := commit()
	if err != nil {
		return err
	}
	if o.release == "" {
		o.release = fmt.Sprintf("v0.0.0-%s-%.12s", created.UTC().Format("20060102150405"), rev)
	}
	if err := validRelease(o.release); err != nil {
		return err
	}
	cas, err := ociimage.CABundle()
	if err != nil {
		return err
	}
	var push []func() error
	for _, b := range binaries {
		started := time.Now()
		idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
		var size int64
		for _, pl := range platforms {
			bin := filepath.Join(o.out, "bin", pl.OS+"_"+pl.Architecture, b.name)
			if err := goBuild(ctx, bin, b.pkg, b.tags, pl, o.release, rev); err != nil {
				return err
			}
			data, err := os.ReadFile(bin)
			if err != nil {
				return err
			}
			img, err := ociimage.Build(ociimage.Spec{Name: b.name, Description: b.description, Binary: data, Platform: pl, Release: o.release, Revision: rev, Source: source, Created: created, CABundle: cas})
			if err != nil {
				return fmt.Errorf("%s for %s: %w", b.name, pl, err)
			}
			if size, err = compressedSize(img); err != nil {
				return err
			}
			p := pl
			idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &p}})
		}
		dir := filepath.Join(o.out, b.name)
		if err := os.RemoveAll(dir); err != nil {
			return err
		}
		if _, err := layout.Write(dir, idx); err != nil {
			return fmt.Errorf("writing %s: %w", dir, err)
		}
		digest, err := idx.Digest()
		if err != nil {
			return err
		}
		fmt.Printf("%s %s: %s (%.1f MB compressed per platform, %s)\n", b.name, o.release, digest, float64(size)/1e6, time.Since(started).Round(100*time.Millisecond))
		if o.repo != "" {
			ref, err := name.NewTag(strings.TrimSuffix(o.repo, "/") + "/" + b.name + ":" + o.release)
			if err != nil {
				return fmt.Errorf("--repo %q: %w", o.repo, err)
			}
			index := idx
			push = append(push, func() error {
				if err := remote.WriteIndex(ref, index, remote.WithContext(ctx), remote.WithAuthFromKeychain(keychain())); err != nil {
					return fmt.Errorf("pushing %s: %w", ref, err)
				}
				fmt.Printf("pushed %s@%s\n", ref, digest)
				return nil
			})
		}
	}
	// Pushed after both are built, so a build failure pushes nothing.
	for _, p := range push {
		if err := p(); err != nil {
			return err
		}
	}
	return nil
}

// goBuild builds a binary as ociimage.BuildBinary does (static, reproducible), with the
// release and revision in pkg/version and without the symbol table.
func goBuild(ctx context.Context, out, pkg, tags string, pl v1.Platform, release, revision string) error {
	ldflags := fmt.Sprintf("-s -w -X github.com/plinth-dev/plinth/pkg/version.release=%s -X github.com/plinth-dev/plinth/pkg/version.revision=%s", release, revision)
	return ociimage.BuildBinary(ctx, out, pkg, tags, pl, ldflags)
}

// commit is the checked-out commit and its committer time, which the images are stamped with.
func commit() (string, time.Time, error) {
	out, err := exec.Command("git", "log", "-1", "--format=%H %ct").Output()
	if err != nil {
		return "", time.Time{}, fmt.Errorf("reading the commit (the images are stamped with it): %w", err)
	}
	fields := strings.Fields(string(out))
	if len(fields) != 2 {
		return "", time.Time{}, fmt.Errorf("git log printed %q", out)
	}
	secs, err := strconv.ParseInt(fields[1], 10, 64)
	if err != nil {
		return "", time.Time{}, err
	}
	return fields[0], time.Unix(secs, 0).UTC(), nil
}

// parsePlatforms reads "linux/amd64,linux/arm64".
func parsePlatforms(s string) ([]v1.Platform, error) {
	var out []v1.Platform
	for _, p := range strings.Split(s, ",") {
		os, arch, ok := strings.Cut(strings.TrimSpace(p), "/")
		if !ok || os != "linux" || arch == "" || strings.Contains(arch, "/") {
			return nil, fmt.Errorf("--platforms: %q is not linux/<arch>", p)
		}
		out = append(out, v1.Platform{OS: os, Architecture: arch})
	}
	return out, nil
}

// validRelease refuses a release a tag cannot carry.
func validRelease(r string) error {
	if _, err := name.NewTag("example.com/x:" + r); err != nil || strings.ContainsAny(r, " \"'") {
		return fmt.Errorf("--release %q cannot be an image tag (letters, digits, '.', '_', '-'; at most 128)", r)
	}
	return nil
}

func compressedSize(img v1.Image) (int64, error) {
	layers, err := img.Layers()
	if err != nil {
		return 0, err
	}
	var n int64
	for _, l := range layers {
		s, err := l.Size()
		if err != nil {
			return 0, err
		}
		n += s
	}
	return n, nil
}

// keychain is IMAGE_REPO_USERNAME/IMAGE_REPO_PASSWORD when both are set, else Docker's config.
func keychain() authn.Keychain {
	user, pass := os.Getenv("IMAGE_REPO_USERNAME"), os.Getenv("IMAGE_REPO_PASSWORD")
	if user == "" || pass == "" {
		return authn.DefaultKeychain
	}
	return staticKeychain{authn.FromConfig(authn.AuthConfig{Username: user, Password: pass})}
}

type staticKeychain struct{ auth authn.Authenticator }

func (k staticKeychain) Resolve(authn.Resource) (authn.Authenticator, error) { return k.auth, nil }
