package integration

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/plinth-dev/plinth/internal/imagefs"
	"github.com/plinth-dev/plinth/test/integration/framework"
)

// TestImages: make images' builder (hack/images) builds plinth-apiserver and plinth-controller
// into OCI images twice with the same digests, pushes them to Cluster local's registry (the one
// plinth-controller runs, with its credential), and each image pulled back runs its binary from
// its own filesystem as the non-root user and prints the release and revision it was stamped
// with. A push with a wrong password fails without echoing it; a release no tag can carry is
// refused before anything is built.
func TestImages(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("running an image's filesystem under chroot needs root")
	}
	p := framework.StartLocalPlatform(t)
	ctx := context.Background()
	var cred authn.AuthConfig
	if err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
		c, err := p.RegistryCredential()
		cred = authn.AuthConfig{Username: c.Username, Password: c.Password}
		return err == nil, nil
	}); err != nil {
		t.Fatal("Cluster local's registry has no credential")
	}
	dir := t.TempDir()
	builder := filepath.Join(dir, "images")
	if out, err := exec.Command("go", "build", "-o", builder, filepath.Join(framework.RepoRoot(), "hack", "images")).CombinedOutput(); err != nil {
		t.Fatalf("building hack/images: %v\n%s", err, out)
	}
	images := func(user, password string, args ...string) (string, error) {
		cmd := exec.Command(builder, args...)
		cmd.Dir = framework.RepoRoot()
		cmd.Env = append(os.Environ(), "IMAGE_REPO_USERNAME="+user, "IMAGE_REPO_PASSWORD="+password)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		return out.String(), err
	}
	const release = "v0.0.0-imagetest"
	repo := p.RegistryEndpoint() + "/plinth"
	first, second := filepath.Join(dir, "first"), filepath.Join(dir, "second")
	if out, err := images(cred.Username, cred.Password, "--out", first, "--repo", repo, "--release", release); err != nil {
		t.Fatalf("make images: %v\n%s", err, out)
	} else {
		t.Logf("make images:\n%s", out)
	}
	if out, err := images("", "", "--out", second, "--release", release); err != nil {
		t.Fatalf("make images again: %v\n%s", err, out)
	}
	revision, err := exec.Command("git", "-C", framework.RepoRoot(), "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}

	for _, image := range []string{"plinth-apiserver", "plinth-controller"} {
		t.Run(image, func(t *testing.T) {
			built := layoutDigest(t, filepath.Join(first, image))
			if again := layoutDigest(t, filepath.Join(second, image)); again != built {
				t.Errorf("the same commit built %s as %s and %s", image, built, again)
			}
			ref, err := name.NewTag(repo + "/" + image + ":" + release)
			if err != nil {
				t.Fatal(err)
			}
			idx, err := remote.Index(ref, remote.WithAuth(authn.FromConfig(cred)))
			if err != nil {
				t.Fatalf("pulling %s: %v", ref, err)
			}
			if pulled, _ := idx.Digest(); pulled != built {
				t.Errorf("%s in the registry is %s, built %s", ref, pulled, built)
			}
			img, err := idx.Image(onlyManifest(t, idx))
			if err != nil {
				t.Fatal(err)
			}
			root := filepath.Join(dir, image+"-rootfs")
			if err := imagefs.Unpack(img, root); err != nil {
				t.Fatal(err)
			}
			cf, err := img.ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			if cf.Config.User != "65532:65532" || cf.Config.Labels["org.opencontainers.image.version"] != release ||
				cf.Config.Labels["org.opencontainers.image.revision"] != strings.TrimSpace(string(revision)) {
				t.Errorf("config: user %q, labels %v", cf.Config.User, cf.Config.Labels)
			}
			cmd := exec.Command(cf.Config.Entrypoint[0], "--version")
			cmd.Env, cmd.Dir = cf.Config.Env, "/"
			cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: root, Credential: &syscall.Credential{Uid: 65532, Gid: 65532}}
			out, err := cmd.CombinedOutput()
			want := fmt.Sprintf("%s version %s (%s)", image, release, strings.TrimSpace(string(revision)))
			if err != nil || strings.TrimSpace(string(out)) != want {
				t.Errorf("%s --version in its image: %v\n%s\nwant %q", image, err, out, want)
			}
		})
	}

	t.Run("a wrong password fails the push and is not printed", func(t *testing.T) {
		// Another release: the images pushed above are in the registry already, and a push
		// of what is there writes nothing, so it would need no credential.
		const wrong, other = "not-the-password-4f1c", release + "-other"
		out, err := images(cred.Username, wrong, "--out", filepath.Join(dir, "third"), "--repo", repo, "--release", other)
		if err == nil || !strings.Contains(out, "pushing "+repo+"/plinth-apiserver:"+other) || strings.Contains(out, wrong) {
			t.Errorf("push with a wrong password: %v\n%s", err, out)
		}
	})
	t.Run("a release no tag can carry is refused before building", func(t *testing.T) {
		out, err := images("", "", "--out", filepath.Join(dir, "fourth"), "--release", "v1+build")
		if err == nil || !strings.Contains(out, `--release "v1+build" cannot be an image tag`) {
			t.Errorf("--release v1+build: %v\n%s", err, out)
		}
		if _, statErr := os.Stat(filepath.Join(dir, "fourth")); statErr == nil {
			t.Error("something was written for a refused release")
		}
	})
}

// layoutDigest is the digest of the index an OCI layout holds: layout.Write writes the index
// itself as the layout's index.json.
func layoutDigest(t *testing.T, dir string) v1.Hash {
	t.Helper()
	l, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	d, err := l.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// onlyManifest is the digest of the index's one (linux/amd64) image.
func onlyManifest(t *testing.T, idx v1.ImageIndex) v1.Hash {
	t.Helper()
	m, err := idx.IndexManifest()
	if err != nil || len(m.Manifests) != 1 || m.Manifests[0].Platform == nil || m.Manifests[0].Platform.Architecture != "amd64" {
		t.Fatalf("index: %+v %v", m, err)
	}
	return m.Manifests[0].Digest
}
