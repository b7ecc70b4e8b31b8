// Package ociimage assembles OCI images without Docker or a base image from a registry: a base
// layer the project writes itself (users, CA bundle, nsswitch.conf, /tmp) and a layer with one
// static binary, every byte following from the Spec so that equal inputs give equal digests.
// It also builds those static binaries (BuildBinary).
//
// hack/images (`make images`) builds plinth-apiserver's and plinth-controller's images with it;
// the local platform's real node (internal/localplatform) builds its pause image (hack/pause)
// and its etcd image with it, so the images a real kubelet runs are made the same way as
// Plinth's own.
package ociimage

import (
	"archive/tar"
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"path"
	"slices"
	"sort"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"golang.org/x/crypto/x509roots/fallback/bundle"
)

// NonRoot is the user and group every Plinth container runs as, unless Spec.User says
// otherwise; 65532 is the "nonroot" of distroless and ko images, so policies written for
// those fit.
const NonRoot = 65532

// binDir is where the binary lives in the image, on PATH.
const binDir = "/usr/local/bin"

// caFile is the CA bundle's path; Go's crypto/x509 reads it on Linux without being told.
const caFile = "/etc/ssl/certs/ca-certificates.crt"

// Spec is one image: one binary for one platform, and what its labels say.
type Spec struct {
	// Name is the binary's name and the image's title: plinth-apiserver.
	Name string
	// Description is the image's description label: "Plinth's aggregated API server".
	Description string
	// Binary is the static executable.
	Binary []byte
	// Platform is the binary's OS and architecture.
	Platform v1.Platform
	// Release, Revision and Source fill the OCI labels; Created is the commit's time, so the
	// same commit gives the same image.
	Release, Revision, Source string
	Created                   time.Time
	// CABundle is the PEM bundle written to caFile.
	CABundle []byte
	// Entrypoint is the command the image runs; empty is the binary alone,
	// /usr/local/bin/<Name>. Set it to give the binary fixed arguments.
	Entrypoint []string
	// User is the user:group the image runs as; empty is NonRoot:NonRoot. Only root and
	// nonroot have names in the image's /etc/passwd.
	User string
}

// Build assembles the image: a base layer (users, CA bundle, /tmp) the project builds
// itself, since no base image can be pulled, and a layer with the binary. Every byte follows
// from spec: files are sorted, owned by fixed ids, stamped with Created, and compressed
// without a timestamp, so equal specs give equal digests.
func Build(spec Spec) (v1.Image, error) {
	base, err := layer(baseFiles(spec.CABundle), spec.Created)
	if err != nil {
		return nil, err
	}
	app, err := layer([]file{
		{name: "usr/", mode: 0o755, dir: true},
		{name: "usr/local/", mode: 0o755, dir: true},
		{name: "usr/local/bin/", mode: 0o755, dir: true},
		{name: "usr/local/bin/" + spec.Name, mode: 0o755, data: spec.Binary},
	}, spec.Created)
	if err != nil {
		return nil, err
	}
	// The history's comment names hack/images, where this assembly was first written: changing
	// it would change every image's digest for nothing.
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img,
		mutate.Addendum{Layer: base, History: v1.History{Created: v1.Time{Time: spec.Created}, CreatedBy: "plinth base: users, CA certificates, /tmp", Comment: "hack/images"}},
		mutate.Addendum{Layer: app, History: v1.History{Created: v1.Time{Time: spec.Created}, CreatedBy: spec.Name + " " + spec.Release, Comment: "hack/images"}},
	)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Variant = spec.Platform.OS, spec.Platform.Architecture, spec.Platform.Variant
	cf.Created = v1.Time{Time: spec.Created}
	cf.Author = spec.Source
	cf.Config = v1.Config{
		Entrypoint: entrypoint(spec),
		User:       user(spec),
		WorkingDir: "/home/nonroot",
		Env:        []string{"PATH=" + binDir + ":/usr/bin:/bin", "SSL_CERT_FILE=" + caFile},
		Labels:     labels(spec),
	}
	return mutate.ConfigFile(img, cf)
}

// entrypoint is spec.Entrypoint, or else the binary alone.
func entrypoint(spec Spec) []string {
	if len(spec.Entrypoint) > 0 {
		return slices.Clone(spec.Entrypoint)
	}
	return []string{path.Join(binDir, spec.Name)}
}

// user is spec.User, or else NonRoot's user and group.
func user(spec Spec) string {
	if spec.User != "" {
		return spec.User
	}
	return fmt.Sprintf("%d:%d", NonRoot, NonRoot)
}

// labels are the OCI image annotations' keys, as labels (what `crane config`, registries and
// scanners read).
func labels(spec Spec) map[string]string {
	return map[string]string{
		"org.opencontainers.image.title":       spec.Name,
		"org.opencontainers.image.version":     spec.Release,
		"org.opencontainers.image.revision":    spec.Revision,
		"org.opencontainers.image.source":      spec.Source,
		"org.opencontainers.image.created":     spec.Created.UTC().Format(time.RFC3339),
		"org.opencontainers.image.licenses":    "Apache-2.0",
		"org.opencontainers.image.description": spec.Description,
	}
}

// file is one entry of a layer.
type file struct {
	name     string
	mode     int64
	dir      bool
	data     []byte
	uid, gid int
}

// baseFiles is the base layer: root and nonroot in passwd and group (Go's os/user and tools
// that print the user read them), nsswitch.conf (Go's resolver reads the hosts order from it),
// the CA bundle, a /tmp anyone may write to and nonroot's home.
func baseFiles(caBundle []byte) []file {
	return []file{
		{name: "etc/", mode: 0o755, dir: true},
		{name: "etc/passwd", mode: 0o644, data: []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")},
		{name: "etc/group", mode: 0o644, data: []byte("root:x:0:\nnonroot:x:65532:\n")},
		{name: "etc/nsswitch.conf", mode: 0o644, data: []byte("hosts: files dns\n")},
		{name: "etc/ssl/", mode: 0o755, dir: true},
		{name: "etc/ssl/certs/", mode: 0o755, dir: true},
		{name: "etc/ssl/certs/ca-certificates.crt", mode: 0o644, data: caBundle},
		{name: "home/", mode: 0o755, dir: true},
		{name: "home/nonroot/", mode: 0o700, dir: true, uid: NonRoot, gid: NonRoot},
		{name: "root/", mode: 0o700, dir: true},
		{name: "tmp/", mode: 0o1777, dir: true},
	}
}

// layer writes files as a gzip'd tar layer, in name order, every entry stamped with mtime.
func layer(files []file, mtime time.Time) (v1.Layer, error) {
	sort.Slice(files, func(i, j int) bool { return files[i].name < files[j].name })
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		hdr := &tar.Header{Name: f.name, Mode: f.mode, Uid: f.uid, Gid: f.gid, ModTime: mtime.UTC(), Format: tar.FormatPAX}
		if f.dir {
			hdr.Typeflag = tar.TypeDir
		} else {
			hdr.Typeflag, hdr.Size = tar.TypeReg, int64(len(f.data))
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil },
		tarball.WithMediaType(types.OCILayer), tarball.WithCompressedCaching)
}

// CABundle is Mozilla's root store as the Go module golang.org/x/crypto/x509roots/fallback
// pins it, in PEM: a bundle from the module proxy, so the same go.sum gives the same bytes on
// every machine (the build machine's /etc/ssl would not). Roots NSS distrusts after a date
// are left out, since a PEM bundle cannot carry that constraint.
func CABundle() ([]byte, error) {
	var out bytes.Buffer
	for root := range bundle.Roots() {
		if root.Constraint != nil {
			continue
		}
		if _, err := x509.ParseCertificate(root.Certificate); err != nil {
			return nil, fmt.Errorf("a root of the bundle does not parse: %w", err)
		}
		if err := pem.Encode(&out, &pem.Block{Type: "CERTIFICATE", Bytes: root.Certificate}); err != nil {
			return nil, err
		}
	}
	if out.Len() == 0 {
		return nil, fmt.Errorf("the CA bundle is empty")
	}
	return out.Bytes(), nil
}
