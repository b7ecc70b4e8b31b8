// Package artifact packages an OCIArtifact's manifests in Flux's artifact format and keeps them
// in an OCI registry: push, look a tag up, list, delete and prune tags.
//
// The format is `flux push artifact`'s: an OCI manifest with config media type
// application/vnd.cncf.flux.config.v1+json, one layer application/vnd.cncf.flux.content.v1.tar+gzip
// (a tarball of the files, reproducible: no owners, no times) and the
// org.opencontainers.image.source, .revision and .created annotations. Push assembles it in
// memory as Flux's library (github.com/fluxcd/pkg/oci) does from a directory, with its
// constants and through its client's options; the tests check that both give the same bytes
// and that Flux's client pulls what Push pushed.
//
// Registries Plinth runs listen on localhost and speak plain HTTP; the registry client uses
// HTTP for loopback hosts and HTTPS for any other. It presents the credential this process
// holds for the registry (registryauth.Local), which the registries require for writes.
//
// What a tag holds is judged by its manifest's digest and its content layer's digest, never by
// its annotations: whoever can push can write any annotation.
package artifact

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/Masterminds/semver/v3"
	"github.com/fluxcd/pkg/oci"
	"github.com/google/go-containerregistry/pkg/crane"
	"github.com/google/go-containerregistry/pkg/name"
	gcrv1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/plinth-dev/plinth/pkg/gitops/manifests"
	"github.com/plinth-dev/plinth/pkg/oci/registryauth"
)

// pushBackoff retries a request the registry failed or a connection it dropped (a registry
// restarting) within one push, briefly: the registry is local, and a push that still fails is
// retried by the caller's own backoff. A refused connection (the registry is down) is not
// retried here at all.
var pushBackoff = remote.Backoff{Duration: 100 * time.Millisecond, Factor: 3, Jitter: 0.1, Steps: 3}

// client is Flux's OCI client with Plinth's user agent, retries and this process's registry
// credentials; every request uses its options.
var client = oci.NewClient([]crane.Option{crane.WithUserAgent("plinth-controller"), oci.WithRetryBackOff(pushBackoff),
	crane.WithAuthFromKeychain(registryauth.Local)})

// Metadata is what the artifact's annotations record.
type Metadata struct {
	// Source identifies what the artifact was built from (org.opencontainers.image.source).
	Source string
	// Revision is the artifact's revision (org.opencontainers.image.revision).
	Revision string
	// Created is when it was built, RFC 3339 (org.opencontainers.image.created); empty means now.
	Created string
}

// Source is the source annotation of an OCIArtifact's pushes.
func Source(namespace, name string) string {
	return "plinth.dev/ociartifact/" + namespace + "/" + name
}

// Revision is the revision annotation of a version with the given files:
// <version>@sha256:<hex of the content>.
func Revision(version string, files map[string][]byte) string {
	return version + "@" + ContentDigest(files)
}

// ContentDigest is sha256:<hex> over the files' names and contents in name order: the same files
// give the same digest whenever and wherever they are packaged, unlike the pushed manifest's
// digest, which includes the time of the push.
func ContentDigest(files map[string][]byte) string {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	h := sha256.New()
	for _, n := range names {
		// Name and length first, so that no two different sets of files hash alike.
		fmt.Fprintf(h, "%s\x00%d\x00", n, len(files[n]))
		h.Write(files[n])
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// Files lays out inline manifests as files, one YAML document per object, named by position,
// kind and name (000-deployment-web.yaml) so that the same manifests always give the same
// files and the files read back in the same order.
func Files(objs []manifests.Object) (map[string][]byte, error) {
	files := make(map[string][]byte, len(objs))
	for i, o := range objs {
		data, err := encodeYAML(o.Object)
		if err != nil {
			return nil, fmt.Errorf("manifest %d: %w", i, err)
		}
		files[fmt.Sprintf("%03d-%s-%s.yaml", i, strings.ToLower(o.GetKind()), o.GetName())] = data
	}
	return files, nil
}

// ConfigMapFiles returns the files of a ConfigMap's data and binaryData: the keys that are
// manifest files (.yaml, .yml), under their own names. Other keys are not packaged.
func ConfigMapFiles(data map[string]string, binaryData map[string][]byte) map[string][]byte {
	files := map[string][]byte{}
	for k, v := range data {
		if manifests.IsManifestFile(k) {
			files[k] = []byte(v)
		}
	}
	for k, v := range binaryData {
		if manifests.IsManifestFile(k) {
			files[k] = v
		}
	}
	return files
}

// reference is <endpoint>/<repository>:<tag>, checked.
func reference(endpoint, repository, tag string) (name.Reference, error) {
	ref, err := name.ParseReference(endpoint+"/"+repository+":"+tag, name.StrictValidation)
	if err != nil {
		return nil, fmt.Errorf("%s/%s:%s is not a valid artifact reference: %w", endpoint, repository, tag, err)
	}
	return ref, nil
}

// Push packages the files in Flux's artifact format and pushes them to
// <endpoint>/<repository>:<tag>, and returns the pushed manifest's digest, sha256:<hex>. The
// artifact is the one `flux push artifact` makes of a directory holding these files, byte for
// byte (same layer, config and manifest for the same metadata), built in memory: writing the
// files to disk for Flux's client to archive them again costs more than the push itself.
// A refused or failed connection is returned as an error for the caller to retry.
func Push(ctx context.Context, endpoint, repository, tag string, files map[string][]byte, meta Metadata) (string, error) {
	ref, err := reference(endpoint, repository, tag)
	if err != nil {
		return "", err
	}
	content, err := archive(files)
	if err != nil {
		return "", err
	}
	if meta.Created == "" {
		meta.Created = time.Now().UTC().Format(time.RFC3339)
	}
	img, err := image(content, meta)
	if err != nil {
		return "", err
	}
	if err := crane.Push(img, ref.String(), remoteOptions(ctx)...); err != nil {
		return "", fmt.Errorf("pushing %s: %w", ref, err)
	}
	digest, err := img.Digest()
	if err != nil {
		return "", err
	}
	return digest.String(), nil
}

// image is the artifact as Flux's client assembles it (oci.Client.Push): an empty image whose
// config records the creation time, with Flux's config media type, the annotations and the one
// content layer.
func image(content []byte, meta Metadata) (gcrv1.Image, error) {
	created, err := time.Parse(time.RFC3339, meta.Created)
	if err != nil {
		return nil, fmt.Errorf("invalid created time %q: %w", meta.Created, err)
	}
	cfg, err := empty.Image.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg.Created = gcrv1.Time{Time: created}
	// The config is set before its media type changes: go-containerregistry keeps the raw
	// config of a non-image media type, so later changes to it would be lost.
	img, err := mutate.ConfigFile(empty.Image, cfg)
	if err != nil {
		return nil, err
	}
	img = mutate.MediaType(img, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, oci.CanonicalConfigMediaType)
	annotations := (&oci.Metadata{Source: meta.Source, Revision: meta.Revision, Created: meta.Created}).ToAnnotations()
	img = mutate.Annotations(img, annotations).(gcrv1.Image)
	return mutate.Append(img, mutate.Addendum{Layer: static.NewLayer(content, oci.CanonicalContentMediaType)})
}

// archive is the gzipped tarball Flux's client makes of a directory holding the files
// (github.com/fluxcd/pkg/tar.Tar): the directory itself as ".", mode 0755, then the files in
// name order, mode 0644, with owners and times cleared.
func archive(files map[string][]byte) ([]byte, error) {
	if len(files) == 0 {
		return nil, errors.New("the artifact has no files")
	}
	names := make([]string, 0, len(files))
	for n := range files {
		if !manifests.ValidFileName(n) {
			return nil, fmt.Errorf("%q is not a valid file name", n)
		}
		names = append(names, n)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	write := func(fi fileInfo, content []byte) error {
		h, err := tar.FileInfoHeader(fi, "")
		if err != nil {
			return err
		}
		h.Name = fi.name
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		_, err = tw.Write(content)
		return err
	}
	if err := write(fileInfo{name: ".", mode: fs.ModeDir | 0o755}, nil); err != nil {
		return nil, err
	}
	for _, n := range names {
		if err := write(fileInfo{name: n, mode: 0o644, size: int64(len(files[n]))}, files[n]); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := gz.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// fileInfo describes a file of the archive to tar.FileInfoHeader, as a file on disk with no
// owner or times would be.
type fileInfo struct {
	name string
	mode fs.FileMode
	size int64
}

func (f fileInfo) Name() string       { return f.name }
func (f fileInfo) Size() int64        { return f.size }
func (f fileInfo) Mode() fs.FileMode  { return f.mode }
func (f fileInfo) ModTime() time.Time { return time.Time{} }
func (f fileInfo) IsDir() bool        { return f.mode.IsDir() }
func (f fileInfo) Sys() any           { return nil }

// remoteOptions are the options of a read or delete: the same client, in ctx.
func remoteOptions(ctx context.Context) []crane.Option {
	return append([]crane.Option{crane.WithContext(ctx)}, client.GetOptions()...)
}

// isNotFound says whether the registry answered that the repository, tag or manifest does not
// exist.
func isNotFound(err error) bool {
	var terr *transport.Error
	return errors.As(err, &terr) && terr.StatusCode == http.StatusNotFound
}

// Tagged is what a tag points to.
type Tagged struct {
	// Digest is the manifest's digest, sha256:<hex>, computed from the manifest as read.
	Digest string
	// Revision is the manifest's revision annotation: what its pusher wrote, which proves
	// nothing about the content.
	Revision string
	// Layer is the digest of the manifest's content layer, the one layer Flux extracts, when
	// the manifest is in Flux's format (Flux's config media type, exactly one layer, of Flux's
	// content media type); empty for anything else.
	Layer string
}

// Holds says whether the tag holds the files of revision as Push packages them: its content
// layer is theirs (layer, from LayerDigest) and its revision annotation is revision. The
// layer decides what Flux would apply; the annotation only tells two versions of the same
// files apart.
func (t Tagged) Holds(revision, layer string) bool {
	return t.Layer != "" && t.Layer == layer && t.Revision == revision
}

// Lookup reads the manifest a tag points to; found is false when the repository or tag does
// not exist.
func Lookup(ctx context.Context, endpoint, repository, tag string) (tagged Tagged, found bool, err error) {
	ref, err := reference(endpoint, repository, tag)
	if err != nil {
		return Tagged{}, false, err
	}
	raw, err := crane.Manifest(ref.String(), remoteOptions(ctx)...)
	if isNotFound(err) {
		return Tagged{}, false, nil
	}
	if err != nil {
		return Tagged{}, false, fmt.Errorf("reading %s: %w", ref, err)
	}
	m, err := gcrv1.ParseManifest(bytes.NewReader(raw))
	if err != nil {
		return Tagged{}, false, fmt.Errorf("reading %s: %w", ref, err)
	}
	h, _, err := gcrv1.SHA256(bytes.NewReader(raw))
	if err != nil {
		return Tagged{}, false, err
	}
	tagged = Tagged{Digest: h.String(), Revision: m.Annotations[oci.RevisionAnnotation]}
	if m.Config.MediaType == oci.CanonicalConfigMediaType && len(m.Layers) == 1 && m.Layers[0].MediaType == oci.CanonicalContentMediaType {
		tagged.Layer = m.Layers[0].Digest.String()
	}
	return tagged, true, nil
}

// LayerDigest is the digest of the content layer Push makes of the files, sha256:<hex>: the
// archive is reproducible (no owners, no times), so the same files give the same layer.
func LayerDigest(files map[string][]byte) (string, error) {
	content, err := archive(files)
	if err != nil {
		return "", err
	}
	h, _, err := gcrv1.SHA256(bytes.NewReader(content))
	if err != nil {
		return "", err
	}
	return h.String(), nil
}

// Restore points the tag at the manifest digest (sha256:<hex>) again, the very bytes pushed
// before, and says whether it could: false, with no error, when the registry no longer has that
// manifest (or its blobs) in the repository. The manifest is read by digest, so what is put
// back is verified to be what was pushed.
func Restore(ctx context.Context, endpoint, repository, tag, digest string) (bool, error) {
	ref, err := reference(endpoint, repository, tag)
	if err != nil {
		return false, err
	}
	src, err := name.NewDigest(endpoint+"/"+repository+"@"+digest, name.StrictValidation)
	if err != nil {
		return false, fmt.Errorf("%s is not a manifest digest: %w", digest, err)
	}
	desc, err := remote.Get(src, remoteOpts(ctx)...)
	if isNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading %s: %w", src, err)
	}
	if err := remote.Tag(ref.(name.Tag), desc, remoteOpts(ctx)...); err != nil {
		if isBlobUnknown(err) {
			return false, nil
		}
		return false, fmt.Errorf("restoring %s: %w", ref, err)
	}
	return true, nil
}

// remoteOpts are the remote options of the client's crane options, in ctx.
func remoteOpts(ctx context.Context) []remote.Option {
	return crane.GetOptions(remoteOptions(ctx)...).Remote
}

// isBlobUnknown says whether the registry refused a manifest because a blob it references is
// gone.
func isBlobUnknown(err error) bool {
	var terr *transport.Error
	if !errors.As(err, &terr) {
		return false
	}
	for _, d := range terr.Errors {
		if d.Code == transport.BlobUnknownErrorCode || d.Code == transport.ManifestBlobUnknownErrorCode {
			return true
		}
	}
	return false
}

// Tags lists a repository's tags; a repository that does not exist has none.
func Tags(ctx context.Context, endpoint, repository string) ([]string, error) {
	repo, err := name.NewRepository(endpoint+"/"+repository, name.StrictValidation)
	if err != nil {
		return nil, fmt.Errorf("%s/%s is not a valid repository: %w", endpoint, repository, err)
	}
	tags, err := crane.ListTags(repo.String(), remoteOptions(ctx)...)
	if isNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing the tags of %s: %w", repo, err)
	}
	return tags, nil
}

// DeleteTag deletes a tag (the registry must allow deletes); deleting one that does not exist
// succeeds. The manifest and blobs stay until the registry's garbage collection.
func DeleteTag(ctx context.Context, endpoint, repository, tag string) error {
	ref, err := reference(endpoint, repository, tag)
	if err != nil {
		return err
	}
	if err := crane.Delete(ref.String(), remoteOptions(ctx)...); err != nil && !isNotFound(err) {
		return fmt.Errorf("deleting %s: %w", ref, err)
	}
	return nil
}

// Prune deletes a repository's semver tags but the newest keep (by semver precedence, so 1.10.0
// is newer than 1.9.0) and returns the deleted tags. The tag latest, tags that are not
// versions and the protected tags (the version just pushed, which may be older than others
// after a rollback) are never deleted; protected tags count among the keep newest only when
// they are among them. keep ≤ 0 keeps everything.
func Prune(ctx context.Context, endpoint, repository string, keep int, protected ...string) ([]string, error) {
	if keep <= 0 {
		return nil, nil
	}
	tags, err := Tags(ctx, endpoint, repository)
	if err != nil {
		return nil, err
	}
	versions := SemverTags(tags)
	if len(versions) <= keep {
		return nil, nil
	}
	var deleted []string
	for _, tag := range versions[keep:] {
		if slices.Contains(protected, tag) {
			continue
		}
		if err := DeleteTag(ctx, endpoint, repository, tag); err != nil {
			return deleted, err
		}
		deleted = append(deleted, tag)
	}
	return deleted, nil
}

// SemverTags returns the tags that are semantic versions, newest first. A tag's '_' stands for
// the version's '+' (a tag may not hold '+'); latest and other tags are left out.
func SemverTags(tags []string) []string {
	type tagged struct {
		tag string
		v   *semver.Version
	}
	var vs []tagged
	for _, t := range tags {
		if t == "latest" {
			continue
		}
		v, err := semver.StrictNewVersion(strings.TrimPrefix(strings.ReplaceAll(t, "_", "+"), "v"))
		if err != nil {
			continue
		}
		vs = append(vs, tagged{t, v})
	}
	sort.SliceStable(vs, func(i, j int) bool {
		if c := vs[i].v.Compare(vs[j].v); c != 0 {
			return c > 0
		}
		// Versions equal but for build metadata: a stable order.
		return vs[i].tag > vs[j].tag
	})
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.tag
	}
	return out
}

// ParseURL splits what URL makes with a tag, oci://<endpoint>/<repository>:<tag>; ok is false
// for anything else.
func ParseURL(url string) (endpoint, repository, tag string, ok bool) {
	rest, ok := strings.CutPrefix(url, oci.OCIRepositoryPrefix)
	if !ok {
		return "", "", "", false
	}
	endpoint, ref, ok := strings.Cut(rest, "/")
	if !ok {
		return "", "", "", false
	}
	i := strings.LastIndex(ref, ":")
	if i <= 0 || i == len(ref)-1 {
		return "", "", "", false
	}
	return endpoint, ref[:i], ref[i+1:], true
}

// URL is the artifact's address as Flux's OCIRepository names it, oci://<endpoint>/<repository>,
// with :<tag> when tag is not empty.
func URL(endpoint, repository, tag string) string {
	u := oci.OCIRepositoryPrefix + endpoint + "/" + repository
	if tag != "" {
		u += ":" + tag
	}
	return u
}
