package imagefs

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

func image(t *testing.T, entries ...*tar.Header) *bytes.Buffer {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range entries {
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write(bytes.Repeat([]byte("x"), int(h.Size))); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return &buf
}

func unpackEntries(t *testing.T, dir string, entries ...*tar.Header) error {
	t.Helper()
	data := image(t, entries...).Bytes()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil })
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		t.Fatal(err)
	}
	return Unpack(img, dir)
}

func TestUnpackKeepsModesAndOwners(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("owners other than the caller's need root")
	}
	dir := t.TempDir()
	err := unpackEntries(t, dir,
		&tar.Header{Name: "tmp/", Typeflag: tar.TypeDir, Mode: 0o1777},
		&tar.Header{Name: "home/nonroot/", Typeflag: tar.TypeDir, Mode: 0o700, Uid: 65532, Gid: 65532},
		&tar.Header{Name: "bin/app", Typeflag: tar.TypeReg, Mode: 0o755, Size: 3})
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]os.FileMode{"tmp": os.ModeDir | os.ModeSticky | 0o777, "home/nonroot": os.ModeDir | 0o700, "bin/app": 0o755} {
		info, err := os.Stat(filepath.Join(dir, name))
		if err != nil || info.Mode() != want {
			t.Errorf("%s: %v %v, want %v", name, info.Mode(), err, want)
		}
	}
	if info, err := os.Stat(filepath.Join(dir, "home/nonroot")); err != nil || info.Sys().(*syscall.Stat_t).Uid != 65532 {
		t.Errorf("home/nonroot is not owned by 65532: %v", err)
	}
}

func TestUnpackRefusesLinksAndEscapes(t *testing.T) {
	for _, h := range []*tar.Header{
		{Name: "etc/link", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd", Mode: 0o777},
		{Name: "dev/null", Typeflag: tar.TypeChar, Mode: 0o666},
	} {
		err := unpackEntries(t, t.TempDir(), h)
		if err == nil || !strings.Contains(err.Error(), h.Name) {
			t.Errorf("%s: %v", h.Name, err)
		}
	}
}
