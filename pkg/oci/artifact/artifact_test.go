package artifact

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/oci"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/crane"
	gcrv1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/plinth-dev/plinth/pkg/gitops/manifests"
	"github.com/plinth-dev/plinth/pkg/oci/artifact/artifacttest"
)

var testFiles = map[string][]byte{
	"000-deployment-web.yaml": []byte("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n"),
	"001-configmap-web.yaml":  []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  a: b\n"),
}

const created = "2026-11-23T10:00:00Z"

func testMeta(files map[string][]byte) Metadata {
	return Metadata{Source: Source("team-a", "app"), Revision: Revision("1.0.0", files), Created: created}
}

// ociManifest is what the registry serves for a tag.
type ociManifest struct {
	SchemaVersion int    `json:"schemaVersion"`
	MediaType     string `json:"mediaType"`
	Config        struct {
		MediaType string `json:"mediaType"`
	} `json:"config"`
	Layers []struct {
		MediaType string `json:"mediaType"`
	} `json:"layers"`
	Annotations map[string]string `json:"annotations"`
}

// getManifest reads a tag's manifest through the registry's /v2 API, as any client would.
func getManifest(t *testing.T, endpoint, repository, tag string) (ociManifest, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+endpoint+"/v2/"+repository+"/manifests/"+tag, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/vnd.oci.image.manifest.v1+json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET manifest %s:%s: %s", repository, tag, resp.Status)
	}
	var m ociManifest
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		t.Fatal(err)
	}
	return m, resp.Header.Get("Docker-Content-Digest")
}

func TestPushWritesFluxArtifactFormat(t *testing.T) {
	reg := artifacttest.Start(t)
	ctx := context.Background()
	meta := testMeta(testFiles)
	digest, err := Push(ctx, reg.Endpoint, "plinth/workloads/app", "1.0.0", testFiles, meta)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(digest, "sha256:") || len(digest) != len("sha256:")+64 {
		t.Fatalf("digest %q", digest)
	}
	m, served := getManifest(t, reg.Endpoint, "plinth/workloads/app", "1.0.0")
	if served != digest {
		t.Errorf("the registry serves digest %s, Push returned %s", served, digest)
	}
	if m.SchemaVersion != 2 || m.MediaType != "application/vnd.oci.image.manifest.v1+json" {
		t.Errorf("manifest %d %q", m.SchemaVersion, m.MediaType)
	}
	if m.Config.MediaType != "application/vnd.cncf.flux.config.v1+json" {
		t.Errorf("config media type %q", m.Config.MediaType)
	}
	if len(m.Layers) != 1 || m.Layers[0].MediaType != "application/vnd.cncf.flux.content.v1.tar+gzip" {
		t.Errorf("layers %+v", m.Layers)
	}
	want := map[string]string{
		"org.opencontainers.image.source":   "plinth.dev/ociartifact/team-a/app",
		"org.opencontainers.image.revision": meta.Revision,
		"org.opencontainers.image.created":  created,
	}
	if diff := cmp.Diff(want, m.Annotations); diff != "" {
		t.Errorf("annotations (-want +got):\n%s", diff)
	}
	if !strings.HasPrefix(meta.Revision, "1.0.0@sha256:") {
		t.Errorf("revision %q", meta.Revision)
	}

	// Flux's own client pulls it and gets the files back.
	out := t.TempDir()
	pulled, err := oci.NewClient(nil).Pull(ctx, reg.Endpoint+"/plinth/workloads/app:1.0.0", out)
	if err != nil {
		t.Fatal(err)
	}
	if pulled.Revision != meta.Revision || pulled.Source != meta.Source || pulled.Created != created {
		t.Errorf("pulled metadata %+v", pulled)
	}
	got := map[string][]byte{}
	entries, err := os.ReadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(out, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		got[e.Name()] = data
	}
	if diff := cmp.Diff(testFiles, got); diff != "" {
		t.Errorf("pulled files (-want +got):\n%s", diff)
	}
}

// The same files and metadata pushed by `flux push artifact`'s library from a directory give
// the very same manifest: byte for byte Flux's format, small artifacts and large ones (files
// larger than Flux's copy buffer, hundreds of files).
func TestPushMatchesFluxPushOfTheSameDirectory(t *testing.T) {
	reg := artifacttest.Start(t)
	ctx := context.Background()
	large, err := Files(benchObjects(200))
	if err != nil {
		t.Fatal(err)
	}
	large["zz-big.yaml"] = []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big\ndata:\n  blob: " + strings.Repeat("0123456789abcdef", 16<<10) + "\n")
	for i, files := range []map[string][]byte{testFiles, large} {
		meta := testMeta(files)
		digest, err := Push(ctx, reg.Endpoint, "plinth/app", fmt.Sprint(i), files, meta)
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		for n, content := range files {
			if err := os.WriteFile(filepath.Join(dir, n), content, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		flux, err := oci.NewClient(nil).Push(ctx, reg.Endpoint+"/flux/app:"+fmt.Sprint(i), dir,
			oci.WithPushMetadata(oci.Metadata{Source: meta.Source, Revision: meta.Revision, Created: created}))
		if err != nil {
			t.Fatal(err)
		}
		if want := reg.Endpoint + "/flux/app@" + digest; flux != want {
			t.Errorf("artifact %d: flux push gave %s, Plinth's push %s", i, flux, digest)
		}
	}
}

func TestLookup(t *testing.T) {
	reg := artifacttest.Start(t)
	ctx := context.Background()
	meta := testMeta(testFiles)
	digest, err := Push(ctx, reg.Endpoint, "plinth/app", "1.0.0", testFiles, meta)
	if err != nil {
		t.Fatal(err)
	}
	layer, err := LayerDigest(testFiles)
	if err != nil {
		t.Fatal(err)
	}
	tagged, found, err := Lookup(ctx, reg.Endpoint, "plinth/app", "1.0.0")
	if err != nil || !found || tagged != (Tagged{Digest: digest, Revision: meta.Revision, Layer: layer}) {
		t.Errorf("Lookup = %+v %v %v, want %s %s %s", tagged, found, err, digest, meta.Revision, layer)
	}
	if !tagged.Holds(meta.Revision, layer) {
		t.Error("the pushed tag does not hold its own files")
	}
	if _, found, err := Lookup(ctx, reg.Endpoint, "plinth/app", "2.0.0"); found || err != nil {
		t.Errorf("unknown tag: found %v, %v", found, err)
	}
	if _, found, err := Lookup(ctx, reg.Endpoint, "plinth/other", "1.0.0"); found || err != nil {
		t.Errorf("unknown repository: found %v, %v", found, err)
	}
}

// The revision annotation proves nothing: other files pushed with the same annotation have
// another layer, and Holds says so; an image not in Flux's format has no content layer.
func TestLookupJudgesTheContentNotTheAnnotation(t *testing.T) {
	reg := artifacttest.Start(t)
	ctx := context.Background()
	meta := testMeta(testFiles)
	layer, err := LayerDigest(testFiles)
	if err != nil {
		t.Fatal(err)
	}
	other := map[string][]byte{"000-configmap-evil.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: evil\n")}
	if _, err := Push(ctx, reg.Endpoint, "plinth/app", "1.0.0", other, meta); err != nil {
		t.Fatal(err)
	}
	tagged, found, err := Lookup(ctx, reg.Endpoint, "plinth/app", "1.0.0")
	if err != nil || !found {
		t.Fatal(found, err)
	}
	if tagged.Revision != meta.Revision || tagged.Layer == layer || tagged.Holds(meta.Revision, layer) {
		t.Errorf("other files under the same annotation: %+v holds %s", tagged, layer)
	}

	img, err := random.Image(256, 1)
	if err != nil {
		t.Fatal(err)
	}
	img = mutate.Annotations(img, map[string]string{oci.RevisionAnnotation: meta.Revision}).(gcrv1.Image)
	if err := crane.Push(img, reg.Endpoint+"/plinth/app:1.0.0"); err != nil {
		t.Fatal(err)
	}
	if tagged, _, err := Lookup(ctx, reg.Endpoint, "plinth/app", "1.0.0"); err != nil || tagged.Layer != "" || tagged.Holds(meta.Revision, layer) {
		t.Errorf("an image not in Flux's format: %+v, %v", tagged, err)
	}
}

// The same files and metadata give the same manifest, byte for byte, every time: what makes a
// version pushed again recognisable.
func TestPushIsReproducible(t *testing.T) {
	reg := artifacttest.Start(t)
	ctx := context.Background()
	first, err := Push(ctx, reg.Endpoint, "plinth/app", "1.0.0", testFiles, testMeta(testFiles))
	if err != nil {
		t.Fatal(err)
	}
	again, err := Push(ctx, reg.Endpoint, "plinth/elsewhere", "1.0.0", testFiles, testMeta(testFiles))
	if err != nil || again != first {
		t.Errorf("pushed again: %s, %v; first %s", again, err, first)
	}
	l1, err1 := LayerDigest(testFiles)
	l2, err2 := LayerDigest(maps.Clone(testFiles))
	if err1 != nil || err2 != nil || l1 != l2 {
		t.Errorf("layer digests %s %s (%v %v)", l1, l2, err1, err2)
	}
}

// Restore puts the pushed manifest back under a moved tag, byte for byte; a manifest the
// registry no longer has cannot be restored.
func TestRestore(t *testing.T) {
	reg := artifacttest.Start(t)
	ctx := context.Background()
	pushed, err := Push(ctx, reg.Endpoint, "plinth/app", "1.0.0", testFiles, testMeta(testFiles))
	if err != nil {
		t.Fatal(err)
	}
	other := map[string][]byte{"000-configmap-evil.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: evil\n")}
	moved, err := Push(ctx, reg.Endpoint, "plinth/app", "1.0.0", other, testMeta(testFiles))
	if err != nil || moved == pushed {
		t.Fatal(moved, err)
	}
	ok, err := Restore(ctx, reg.Endpoint, "plinth/app", "1.0.0", pushed)
	if err != nil || !ok {
		t.Fatalf("Restore: %v %v", ok, err)
	}
	if tagged, _, err := Lookup(ctx, reg.Endpoint, "plinth/app", "1.0.0"); err != nil || tagged.Digest != pushed {
		t.Errorf("after Restore the tag is %s (%v), want %s", tagged.Digest, err, pushed)
	}
	// Restoring a tag that was deleted works the same.
	if err := DeleteTag(ctx, reg.Endpoint, "plinth/app", "1.0.0"); err != nil {
		t.Fatal(err)
	}
	if ok, err := Restore(ctx, reg.Endpoint, "plinth/app", "1.0.0", pushed); err != nil || !ok {
		t.Errorf("Restore of a deleted tag: %v %v", ok, err)
	}
	gone := "sha256:" + strings.Repeat("0", 64)
	if ok, err := Restore(ctx, reg.Endpoint, "plinth/app", "1.0.0", gone); err != nil || ok {
		t.Errorf("Restore of a manifest the registry never had: %v %v", ok, err)
	}
	if ok, err := Restore(ctx, reg.Endpoint, "plinth/app", "1.0.0", "sha256:nope"); err == nil || ok {
		t.Errorf("Restore of a bad digest: %v %v", ok, err)
	}
}

func TestTagsAndDeleteTag(t *testing.T) {
	reg := artifacttest.Start(t)
	ctx := context.Background()
	if tags, err := Tags(ctx, reg.Endpoint, "plinth/app"); err != nil || len(tags) != 0 {
		t.Fatalf("tags of a repository not pushed yet: %v %v", tags, err)
	}
	for _, tag := range []string{"1.0.0", "1.1.0"} {
		if _, err := Push(ctx, reg.Endpoint, "plinth/app", tag, testFiles, testMeta(testFiles)); err != nil {
			t.Fatal(err)
		}
	}
	if err := DeleteTag(ctx, reg.Endpoint, "plinth/app", "1.0.0"); err != nil {
		t.Fatal(err)
	}
	tags, err := Tags(ctx, reg.Endpoint, "plinth/app")
	if err != nil || !slices.Equal(tags, []string{"1.1.0"}) {
		t.Errorf("tags after the delete: %v %v", tags, err)
	}
	if _, found, err := Lookup(ctx, reg.Endpoint, "plinth/app", "1.0.0"); found || err != nil {
		t.Errorf("deleted tag: found %v, %v", found, err)
	}
	// 1.1.0 has the same content, so the same layer: deleting a tag leaves the others whole.
	if _, err := oci.NewClient(nil).Pull(ctx, reg.Endpoint+"/plinth/app:1.1.0", t.TempDir()); err != nil {
		t.Errorf("pulling the tag left: %v", err)
	}
	// Deleting what is gone succeeds.
	if err := DeleteTag(ctx, reg.Endpoint, "plinth/app", "1.0.0"); err != nil {
		t.Errorf("deleting a deleted tag: %v", err)
	}
	if err := DeleteTag(ctx, reg.Endpoint, "plinth/never", "1.0.0"); err != nil {
		t.Errorf("deleting from a repository that does not exist: %v", err)
	}
}

func TestPrune(t *testing.T) {
	reg := artifacttest.Start(t)
	ctx := context.Background()
	pushed := []string{"1.9.0", "1.10.0", "1.2.0", "latest", "dev", "2.0.0-rc.1", "v0.1.0"}
	for _, tag := range pushed {
		if _, err := Push(ctx, reg.Endpoint, "plinth/app", tag, testFiles, testMeta(testFiles)); err != nil {
			t.Fatal(err)
		}
	}
	if deleted, err := Prune(ctx, reg.Endpoint, "plinth/app", 0); err != nil || len(deleted) != 0 {
		t.Fatalf("keep 0 deleted %v, %v", deleted, err)
	}
	deleted, err := Prune(ctx, reg.Endpoint, "plinth/app", 2)
	if err != nil {
		t.Fatal(err)
	}
	// Newest first by semver: 2.0.0-rc.1, 1.10.0 kept; 1.9.0, 1.2.0, v0.1.0 deleted.
	if want := []string{"1.9.0", "1.2.0", "v0.1.0"}; !slices.Equal(deleted, want) {
		t.Errorf("deleted %v, want %v", deleted, want)
	}
	tags, err := Tags(ctx, reg.Endpoint, "plinth/app")
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(tags)
	if want := []string{"1.10.0", "2.0.0-rc.1", "dev", "latest"}; !slices.Equal(tags, want) {
		t.Errorf("tags left %v, want %v", tags, want)
	}
	if deleted, err := Prune(ctx, reg.Endpoint, "plinth/app", 2); err != nil || len(deleted) != 0 {
		t.Errorf("a second prune deleted %v, %v", deleted, err)
	}
	// A rollback pushes an older version: protected, it stays although it is not among the newest.
	if deleted, err := Prune(ctx, reg.Endpoint, "plinth/app", 1, "1.10.0"); err != nil || len(deleted) != 0 {
		t.Errorf("prune with 1.10.0 protected deleted %v, %v", deleted, err)
	}
	if _, found, _ := Lookup(ctx, reg.Endpoint, "plinth/app", "1.10.0"); !found {
		t.Error("the protected tag was deleted")
	}
	if _, found, _ := Lookup(ctx, reg.Endpoint, "plinth/app", "2.0.0-rc.1"); !found {
		t.Error("the newest tag was deleted")
	}
}

func TestSemverTags(t *testing.T) {
	got := SemverTags([]string{"1.9.0", "latest", "1.10.0", "main", "1.10.0-rc.1", "v1.0.0", "1.2", "1.10.0_build.1", "sha256-abc.sig"})
	want := []string{"1.10.0_build.1", "1.10.0", "1.10.0-rc.1", "1.9.0", "v1.0.0"}
	if !slices.Equal(got, want) {
		t.Errorf("SemverTags = %v, want %v", got, want)
	}
}

// A registry that is down refuses the push with an error the caller retries; once it is back,
// with its data, the push succeeds.
func TestPushWhileTheRegistryIsDown(t *testing.T) {
	reg := artifacttest.Start(t)
	ctx := context.Background()
	if _, err := Push(ctx, reg.Endpoint, "plinth/app", "1.0.0", testFiles, testMeta(testFiles)); err != nil {
		t.Fatal(err)
	}
	reg.Stop()
	start := time.Now()
	if _, err := Push(ctx, reg.Endpoint, "plinth/app", "1.1.0", testFiles, testMeta(testFiles)); err == nil {
		t.Fatal("a push to a stopped registry succeeded")
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("a refused push took %s", took)
	}
	if _, _, err := Lookup(ctx, reg.Endpoint, "plinth/app", "1.0.0"); err == nil {
		t.Error("a lookup on a stopped registry succeeded")
	}
	reg.Restart()
	if _, err := Push(ctx, reg.Endpoint, "plinth/app", "1.1.0", testFiles, testMeta(testFiles)); err != nil {
		t.Fatalf("push after the restart: %v", err)
	}
	if _, found, err := Lookup(ctx, reg.Endpoint, "plinth/app", "1.0.0"); !found || err != nil {
		t.Errorf("the version pushed before the restart: found %v, %v", found, err)
	}
}

func TestBadReferences(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct{ endpoint, repository, tag string }{
		{"not a host", "plinth/app", "1.0.0"},
		{"localhost:5000", "Plinth/App", "1.0.0"},
		{"localhost:5000", "plinth/app", "1.0.0+build"},
		{"localhost:5000", "", "1.0.0"},
	} {
		if _, err := Push(ctx, tc.endpoint, tc.repository, tc.tag, testFiles, Metadata{}); err == nil {
			t.Errorf("Push %+v succeeded", tc)
		}
		if _, _, err := Lookup(ctx, tc.endpoint, tc.repository, tc.tag); err == nil {
			t.Errorf("Lookup %+v succeeded", tc)
		}
		if err := DeleteTag(ctx, tc.endpoint, tc.repository, tc.tag); err == nil {
			t.Errorf("DeleteTag %+v succeeded", tc)
		}
	}
	if _, err := Tags(ctx, "not a host", "plinth/app"); err == nil {
		t.Error("Tags of a bad endpoint succeeded")
	}
}

func TestPushRefusesBadFiles(t *testing.T) {
	reg := artifacttest.Start(t)
	ctx := context.Background()
	if _, err := Push(ctx, reg.Endpoint, "plinth/app", "1.0.0", nil, Metadata{}); err == nil {
		t.Error("an artifact without files was pushed")
	}
	if _, err := Push(ctx, reg.Endpoint, "plinth/app", "1.0.0", map[string][]byte{"../x.yaml": []byte("a: b")}, Metadata{}); err == nil {
		t.Error("a file name with a path was pushed")
	}
	if tags, _ := Tags(ctx, reg.Endpoint, "plinth/app"); len(tags) != 0 {
		t.Errorf("tags %v after refused pushes", tags)
	}
}

func obj(apiVersion, kind, name string) manifests.Object {
	return manifests.Object{Unstructured: &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": apiVersion, "kind": kind, "metadata": map[string]interface{}{"name": name},
	}}}
}

func TestFiles(t *testing.T) {
	objs := []manifests.Object{obj("apps/v1", "Deployment", "web"), obj("v1", "ConfigMap", "web")}
	files, err := Files(objs)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]byte{
		"000-deployment-web.yaml": []byte("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n"),
		"001-configmap-web.yaml":  []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n"),
	}
	if diff := cmp.Diff(want, files); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
	// Read back in the same order, as the same objects.
	back, err := manifests.FromFiles(files)
	if err != nil {
		t.Fatal(err)
	}
	if len(back) != 2 || back[0].GetKind() != "Deployment" || back[1].GetKind() != "ConfigMap" {
		t.Errorf("read back %v", back)
	}
	again, _ := Files(objs)
	if ContentDigest(again) != ContentDigest(files) {
		t.Error("the same manifests gave other content")
	}
}

func TestContentDigest(t *testing.T) {
	a := map[string][]byte{"a.yaml": []byte("x"), "b.yaml": []byte("y")}
	if ContentDigest(a) != ContentDigest(map[string][]byte{"b.yaml": []byte("y"), "a.yaml": []byte("x")}) {
		t.Error("the digest depends on map order")
	}
	for _, other := range []map[string][]byte{
		{"a.yaml": []byte("x"), "b.yaml": []byte("z")},
		{"a.yaml": []byte("x"), "c.yaml": []byte("y")},
		{"a.yaml": []byte("xb.yaml"), "": []byte("y")},
		{"a.yaml": []byte("x")},
	} {
		if ContentDigest(other) == ContentDigest(a) {
			t.Errorf("%v has the digest of %v", other, a)
		}
	}
	if r := Revision("1.0.0", a); r != "1.0.0@"+ContentDigest(a) {
		t.Errorf("Revision = %s", r)
	}
}

func TestConfigMapFiles(t *testing.T) {
	got := ConfigMapFiles(
		map[string]string{"app.yaml": "a: b", "notes.txt": "hello", "svc.JSON": "{}"},
		map[string][]byte{"bin.yml": []byte("c: d"), "logo.png": {1, 2}},
	)
	// JSON is not packaged: Flux's kustomize-controller would not apply it.
	want := map[string][]byte{"app.yaml": []byte("a: b"), "bin.yml": []byte("c: d")}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
}

func TestParseURL(t *testing.T) {
	e, r, tag, ok := ParseURL("oci://localhost:5000/team-a/app:1.0.0")
	if !ok || e != "localhost:5000" || r != "team-a/app" || tag != "1.0.0" {
		t.Errorf("ParseURL = %s %s %s %v", e, r, tag, ok)
	}
	for _, bad := range []string{"localhost:5000/a:1", "oci://localhost:5000", "oci://localhost:5000/a", "oci://localhost:5000/a:"} {
		if _, _, _, ok := ParseURL(bad); ok {
			t.Errorf("ParseURL(%q) succeeded", bad)
		}
	}
}

func TestURL(t *testing.T) {
	if u := URL("localhost:5000", "plinth/app", "1.0.0"); u != "oci://localhost:5000/plinth/app:1.0.0" {
		t.Errorf("URL = %s", u)
	}
	if u := URL("localhost:5000", "plinth/app", ""); u != "oci://localhost:5000/plinth/app" {
		t.Errorf("URL = %s", u)
	}
}
