package clusterpack

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	infrav1alpha1 "github.com/plinth-dev/plinth/pkg/apis/infrastructure/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/errkind"
	"github.com/plinth-dev/plinth/pkg/gitops/manifests"
	"github.com/plinth-dev/plinth/pkg/oci/artifact"
)

// artifactFiles reads a kustomize directory from an OCIArtifact of the pack's namespace: the
// files the artifact packages (its inline manifests laid out as files, or its ConfigMap's
// manifest files), the same files its registry holds, read from their source rather than
// pulled so that the pack renders even while the registry is down.
func (c *Controller) artifactFiles(ctx context.Context, pack *infrav1alpha1.InfrastructureClusterPack) (map[string][]byte, error) {
	ref := pack.Spec.Kustomize.ArtifactRef.Name
	art, err := c.plinth.GitopsV1alpha1().OCIArtifacts(pack.Namespace).Get(ctx, ref, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, errkind.Waitingf(contentRetry, "OCIArtifact %s/%s does not exist", pack.Namespace, ref)
	}
	if err != nil {
		return nil, err
	}
	if cm := art.Spec.ConfigMapRef; cm != nil {
		m, err := c.kube.CoreV1().ConfigMaps(pack.Namespace).Get(ctx, cm.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil, errkind.Waitingf(contentRetry, "ConfigMap %s/%s of OCIArtifact %s does not exist", pack.Namespace, cm.Name, ref)
		}
		if err != nil {
			return nil, err
		}
		return artifact.ConfigMapFiles(m.Data, m.BinaryData), nil
	}
	objs := make([]manifests.Object, 0, len(art.Spec.Manifests))
	for i, raw := range art.Spec.Manifests {
		var obj map[string]interface{}
		if err := json.Unmarshal(raw.Raw, &obj); err != nil {
			return nil, errkind.Waitingf(contentRetry, "manifest %d of OCIArtifact %s is not an object", i, ref)
		}
		objs = append(objs, manifests.Object{Unstructured: &unstructured.Unstructured{Object: obj}})
	}
	files, err := artifact.Files(objs)
	if err != nil {
		return nil, errkind.Waiting(err, contentRetry)
	}
	return files, nil
}

// kustomizationNames are the file names kustomize reads a directory's kustomization from.
var kustomizationNames = []string{"kustomization.yaml", "kustomization.yml", "Kustomization"}

// withKustomization returns files with a kustomization.yaml in dir listing every manifest
// file of dir as a resource when dir has none, as Flux's kustomize-controller generates one
// for a directory of plain manifests: an OCIArtifact of plain manifests renders as it is.
func withKustomization(files map[string][]byte, dir string) map[string][]byte {
	dir = strings.Trim(path.Clean("/"+dir), "/")
	in := func(name string) string {
		if dir == "" {
			return name
		}
		return dir + "/" + name
	}
	for _, n := range kustomizationNames {
		if _, ok := files[in(n)]; ok {
			return files
		}
	}
	var resources []string
	for name := range files {
		rel := name
		if dir != "" {
			if !strings.HasPrefix(name, dir+"/") {
				continue
			}
			rel = strings.TrimPrefix(name, dir+"/")
		}
		if !strings.Contains(rel, "/") && manifests.IsManifestFile(rel) {
			resources = append(resources, rel)
		}
	}
	slices.Sort(resources)
	var b strings.Builder
	b.WriteString("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n")
	for _, r := range resources {
		fmt.Fprintf(&b, "- %q\n", r)
	}
	out := make(map[string][]byte, len(files)+1)
	for k, v := range files {
		out[k] = v
	}
	out[in("kustomization.yaml")] = []byte(b.String())
	return out
}
