package artifact

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/fluxcd/pkg/oci"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/plinth-dev/plinth/pkg/gitops/manifests"
	"github.com/plinth-dev/plinth/pkg/oci/artifact/artifacttest"
)

// benchObjects are n manifests as an application has them: Deployments and ConfigMaps of about
// a kilobyte each.
func benchObjects(n int) []manifests.Object {
	objs := make([]manifests.Object, 0, n)
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("app-%03d", i)
		var o map[string]interface{}
		if i%2 == 0 {
			o = map[string]interface{}{
				"apiVersion": "apps/v1", "kind": "Deployment",
				"metadata": map[string]interface{}{"name": name, "namespace": "shop", "labels": map[string]interface{}{"app": name}},
				"spec": map[string]interface{}{
					"replicas": int64(2),
					"selector": map[string]interface{}{"matchLabels": map[string]interface{}{"app": name}},
					"template": map[string]interface{}{
						"metadata": map[string]interface{}{"labels": map[string]interface{}{"app": name}},
						"spec": map[string]interface{}{"containers": []interface{}{map[string]interface{}{
							"name": "web", "image": "registry.example.com/shop/" + name + ":1.4.2",
							"ports":     []interface{}{map[string]interface{}{"containerPort": int64(8080)}},
							"resources": map[string]interface{}{"requests": map[string]interface{}{"cpu": "100m", "memory": "128Mi"}},
							"env":       []interface{}{map[string]interface{}{"name": "LOG_LEVEL", "value": "info"}},
						}}},
					},
				},
			}
		} else {
			o = map[string]interface{}{
				"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]interface{}{"name": name, "namespace": "shop"},
				"data":     map[string]interface{}{"settings.yaml": fmt.Sprintf("feature: %d\nthreshold: 0.75\nendpoints:\n- https://a.example.com\n- https://b.example.com\n", i)},
			}
		}
		objs = append(objs, manifests.Object{Unstructured: &unstructured.Unstructured{Object: o}})
	}
	return objs
}

// BenchmarkPush200 is the figure: packaging and pushing an artifact of 200 manifests
// with Plinth (from the OCIArtifact's objects: files, content digest, push) against the same
// files pushed from a directory with Flux's library as `flux push artifact` does, side by side
// on the same in-process registry. Each push is a new version: one manifest changes, so each
// pushes a new layer, as a release does.
func BenchmarkPush200(b *testing.B) {
	reg := artifacttest.Start(b)
	ctx := context.Background()
	objs := benchObjects(200)
	changing := objs[1].Object["data"].(map[string]interface{})
	// Neither side pays for the registry's first request: one push before either is timed.
	warm, err := Files(objs)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := Push(ctx, reg.Endpoint, "bench/warm", "0.0.0", warm, Metadata{}); err != nil {
		b.Fatal(err)
	}

	b.Run("plinth", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			changing["settings.yaml"] = fmt.Sprintf("plinth: %d\n", i)
			files, err := Files(objs)
			if err != nil {
				b.Fatal(err)
			}
			version := fmt.Sprintf("1.0.%d", i)
			if _, err := Push(ctx, reg.Endpoint, "bench/plinth", version, files, Metadata{
				Source: Source("bench", "app"), Revision: Revision(version, files),
			}); err != nil {
				b.Fatal(err)
			}
		}
	})

	b.Run("flux", func(b *testing.B) {
		dir := b.TempDir()
		files, err := Files(objs)
		if err != nil {
			b.Fatal(err)
		}
		for n, content := range files {
			if err := os.WriteFile(filepath.Join(dir, n), content, 0o644); err != nil {
				b.Fatal(err)
			}
		}
		client := oci.NewClient(oci.DefaultOptions())
		changed := filepath.Join(dir, "001-configmap-app-001.yaml")
		for i := 0; b.Loop(); i++ {
			// The edit a release makes, before `flux push artifact`: not timed.
			b.StopTimer()
			if err := os.WriteFile(changed, fmt.Appendf(nil, "flux: %d\n", i), 0o644); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			version := fmt.Sprintf("1.0.%d", i)
			if _, err := client.Push(ctx, reg.Endpoint+"/bench/flux:"+version, dir, oci.WithPushMetadata(oci.Metadata{
				Source: Source("bench", "app"), Revision: version + "@sha1:0123456789abcdef0123456789abcdef01234567",
			})); err != nil {
				b.Fatal(err)
			}
		}
	})
}
