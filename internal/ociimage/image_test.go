package ociimage

import (
	"archive/tar"
	"context"
	"crypto/x509"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/plinth-dev/plinth/internal/imagefs"
)

var created = time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)

const source = "https://github.com/plinth-dev/plinth"

func spec(t *testing.T) Spec {
	t.Helper()
	cas, err := CABundle()
	if err != nil {
		t.Fatal(err)
	}
	return Spec{Name: "plinth-apiserver", Description: "Plinth's aggregated API server", Binary: []byte("not really a binary"), Platform: v1.Platform{OS: "linux", Architecture: "amd64"},
		Release: "v0.4.0", Revision: "0123456789abcdef", Source: source, Created: created, CABundle: cas}
}

func digest(t *testing.T, s Spec) v1.Hash {
	t.Helper()
	img, err := Build(s)
	if err != nil {
		t.Fatal(err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestBuildIsReproducible: equal inputs give equal digests, and each input counts.
func TestBuildIsReproducible(t *testing.T) {
	s := spec(t)
	first := digest(t, s)
	if again := digest(t, s); again != first {
		t.Fatalf("the same spec gave %s and %s", first, again)
	}
	for what, change := range map[string]func(*Spec){
		"binary":      func(s *Spec) { s.Binary = []byte("another binary") },
		"revision":    func(s *Spec) { s.Revision = "fedcba9876543210" },
		"release":     func(s *Spec) { s.Release = "v0.4.1" },
		"created":     func(s *Spec) { s.Created = s.Created.Add(time.Second) },
		"platform":    func(s *Spec) { s.Platform.Architecture = "arm64" },
		"description": func(s *Spec) { s.Description = "another description" },
		"entrypoint":  func(s *Spec) { s.Entrypoint = []string{"/usr/local/bin/plinth-apiserver", "--flag"} },
		"user":        func(s *Spec) { s.User = "0:0" },
	} {
		c := spec(t)
		change(&c)
		if digest(t, c) == first {
			t.Errorf("another %s gave the same digest", what)
		}
	}
}

// TestImageConfig: OCI media types, a non-root user, the entrypoint and the labels.
func TestImageConfig(t *testing.T) {
	img, err := Build(spec(t))
	if err != nil {
		t.Fatal(err)
	}
	if mt, _ := img.MediaType(); mt != types.OCIManifestSchema1 {
		t.Errorf("manifest media type %s", mt)
	}
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	if m.Config.MediaType != types.OCIConfigJSON || len(m.Layers) != 2 || m.Layers[0].MediaType != types.OCILayer {
		t.Errorf("config %s, layers %+v", m.Config.MediaType, m.Layers)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.Config.User != "65532:65532" || strings.Join(cf.Config.Entrypoint, " ") != "/usr/local/bin/plinth-apiserver" || cf.OS != "linux" || cf.Architecture != "amd64" || !cf.Created.Time.Equal(created) {
		t.Errorf("config %+v", cf)
	}
	for k, want := range map[string]string{
		"org.opencontainers.image.title": "plinth-apiserver", "org.opencontainers.image.version": "v0.4.0",
		"org.opencontainers.image.revision": "0123456789abcdef", "org.opencontainers.image.source": source,
		"org.opencontainers.image.created": "2026-11-28T12:00:00Z", "org.opencontainers.image.description": "Plinth's aggregated API server",
	} {
		if got := cf.Config.Labels[k]; got != want {
			t.Errorf("label %s = %q, want %q", k, got, want)
		}
	}
}

// TestEntrypointAndUserOverrideTheDefaults: a Spec may give the binary fixed arguments and run
// it as another user; the binary stays at /usr/local/bin/<Name>.
func TestEntrypointAndUserOverrideTheDefaults(t *testing.T) {
	s := spec(t)
	s.Name, s.Entrypoint, s.User = "etcd", []string{"/usr/local/bin/etcd", "--data-dir=/var/lib/etcd"}, "0:0"
	img, err := Build(s)
	if err != nil {
		t.Fatal(err)
	}
	s.Entrypoint[1] = "--changed-after-build"
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cf.Config.Entrypoint, []string{"/usr/local/bin/etcd", "--data-dir=/var/lib/etcd"}) || cf.Config.User != "0:0" {
		t.Errorf("entrypoint %q, user %q", cf.Config.Entrypoint, cf.Config.User)
	}
	var found bool
	tr := tar.NewReader(mutate.Extract(img))
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		found = found || hdr.Name == "usr/local/bin/etcd"
	}
	if !found {
		t.Error("the binary is not at /usr/local/bin/etcd")
	}
}

// TestImageFilesystem: every entry is stamped with the commit's time and owned by root except
// nonroot's home; the users exist; the CA bundle holds Mozilla's roots.
func TestImageFilesystem(t *testing.T) {
	img, err := Build(spec(t))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]*tar.Header{}
	contents := map[string]string{}
	tr := tar.NewReader(mutate.Extract(img))
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		hdr.Name = strings.TrimSuffix(hdr.Name, "/")
		files[hdr.Name] = hdr
		data, _ := io.ReadAll(tr)
		contents[hdr.Name] = string(data)
		if !hdr.ModTime.Equal(created) {
			t.Errorf("%s is stamped %s", hdr.Name, hdr.ModTime)
		}
		if owner := hdr.Uid; (owner == NonRoot) != (hdr.Name == "home/nonroot") {
			t.Errorf("%s is owned by %d", hdr.Name, owner)
		}
	}
	if h := files["usr/local/bin/plinth-apiserver"]; h == nil || h.Mode != 0o755 || contents[h.Name] != "not really a binary" {
		t.Errorf("the binary: %+v", h)
	}
	if h := files["tmp"]; h == nil || h.Mode != 0o1777 {
		t.Errorf("/tmp: %+v", h)
	}
	if !strings.Contains(contents["etc/passwd"], "nonroot:x:65532:65532:") || !strings.Contains(contents["etc/group"], "nonroot:x:65532:") {
		t.Errorf("passwd %q, group %q", contents["etc/passwd"], contents["etc/group"])
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM([]byte(contents["etc/ssl/certs/ca-certificates.crt"])) || strings.Count(contents["etc/ssl/certs/ca-certificates.crt"], "BEGIN CERTIFICATE") < 100 {
		t.Error("the CA bundle does not hold Mozilla's roots")
	}
}

// TestRunsAsNonRootFromItsOwnFilesystem runs a program from the image's own filesystem, as
// its user, under chroot: the user resolves, the CA bundle loads, /tmp is writable.
func TestRunsAsNonRootFromItsOwnFilesystem(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("chroot needs root")
	}
	dir := t.TempDir()
	prog := filepath.Join(dir, "main.go")
	if err := os.WriteFile(prog, []byte(probe), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "probe")
	if err := BuildBinary(context.Background(), bin, prog, "", v1.Platform{OS: runtime.GOOS, Architecture: runtime.GOARCH}, ""); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	s := spec(t)
	s.Name, s.Binary = "probe", data
	img, err := Build(s)
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(dir, "rootfs")
	if err := imagefs.Unpack(img, root); err != nil {
		t.Fatal(err)
	}
	cf, _ := img.ConfigFile()
	cmd := exec.Command(cf.Config.Entrypoint[0])
	cmd.Env, cmd.Dir = cf.Config.Env, "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: root, Credential: &syscall.Credential{Uid: NonRoot, Gid: NonRoot}}
	out, err := cmd.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "nonroot 65532 roots tmp" {
		t.Fatalf("the probe in the image: %v\n%s", err, out)
	}
}

// probe prints its user's name and id, "roots" when the system roots load, "tmp" when it can
// write a temporary file.
const probe = `package main

import (
	"crypto/x509"
	"fmt"
	"os"
	"os/user"
)

func main() {
	u, err := user.Current()
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	roots := "no-roots"
	if pool, err := x509.SystemCertPool(); err == nil && pool != nil && len(pool.Subjects()) > 100 {
		roots = "roots"
	}
	tmp := "no-tmp"
	if f, err := os.CreateTemp("", "probe"); err == nil {
		f.Close()
		tmp = "tmp"
	}
	fmt.Println(u.Username, u.Uid, roots, tmp)
}
`
