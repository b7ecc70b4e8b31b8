package flux

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	gitopsv1alpha1 "github.com/plinth-dev/plinth/pkg/apis/gitops/v1alpha1"
	platformv1alpha1 "github.com/plinth-dev/plinth/pkg/apis/platform/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/gitops/delivery"
)

var (
	repoGVR          = sourcev1.GroupVersion.WithResource("ocirepositories")
	kustomizationGVR = kustomizev1.GroupVersion.WithResource("kustomizations")
)

// fakeClients gives every cluster the same fake dynamic client, or err.
type fakeClients struct {
	client dynamic.Interface
	mapper apimeta.RESTMapper
	err    error
}

func (f *fakeClients) For(context.Context, string) (dynamic.Interface, apimeta.RESTMapper, error) {
	return f.client, f.mapper, f.err
}

// fluxMapper maps Flux's two kinds, as a cluster with Flux does; without them, as one without.
func fluxMapper(served bool) apimeta.RESTMapper {
	m := apimeta.NewDefaultRESTMapper(nil)
	if served {
		m.AddSpecific(OCIRepositoryKind, repoGVR, repoGVR.GroupVersion().WithResource("ocirepository"), apimeta.RESTScopeNamespace)
		m.AddSpecific(KustomizationKind, kustomizationGVR, kustomizationGVR.GroupVersion().WithResource("kustomization"), apimeta.RESTScopeNamespace)
	}
	return m
}

// newFakeCluster is a fake target with Flux's kinds, holding objects. Server-side apply
// creates or merges spec, labels and annotations, keeping the status Flux wrote, as a
// server does for a custom resource with a status subresource.
func newFakeCluster(t *testing.T, objects ...runtime.Object) (*dynamicfake.FakeDynamicClient, *fakeClients) {
	t.Helper()
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		repoGVR: "OCIRepositoryList", kustomizationGVR: "KustomizationList",
	}, objects...)
	tracker := client.Tracker()
	client.PrependReactor("patch", "*", func(action clienttesting.Action) (bool, runtime.Object, error) {
		patch := action.(clienttesting.PatchAction)
		if patch.GetPatchType() != types.ApplyPatchType {
			return false, nil, nil
		}
		applied := &unstructured.Unstructured{}
		if err := json.Unmarshal(patch.GetPatch(), &applied.Object); err != nil {
			return true, nil, err
		}
		gvr, ns := patch.GetResource(), patch.GetNamespace()
		existing, err := tracker.Get(gvr, ns, patch.GetName())
		if apierrors.IsNotFound(err) {
			applied.SetGeneration(1)
			if err := tracker.Create(gvr, applied, ns); err != nil {
				return true, nil, err
			}
			stored, err := tracker.Get(gvr, ns, patch.GetName())
			return true, stored, err
		}
		if err != nil {
			return true, nil, err
		}
		current := existing.(*unstructured.Unstructured).DeepCopy()
		current.SetLabels(merge(current.GetLabels(), applied.GetLabels()))
		current.SetAnnotations(merge(current.GetAnnotations(), applied.GetAnnotations()))
		current.Object["spec"] = applied.Object["spec"]
		if err := tracker.Update(gvr, current, ns); err != nil {
			return true, nil, err
		}
		return true, current, nil
	})
	return client, &fakeClients{client: client, mapper: fluxMapper(true)}
}

func merge(into, from map[string]string) map[string]string {
	if into == nil {
		into = map[string]string{}
	}
	for k, v := range from {
		into[k] = v
	}
	return into
}

// applies are the server-side applies the client received.
func applies(client *dynamicfake.FakeDynamicClient) []clienttesting.PatchAction {
	var out []clienttesting.PatchAction
	for _, a := range client.Actions() {
		if p, ok := a.(clienttesting.PatchAction); ok && p.GetPatchType() == types.ApplyPatchType {
			out = append(out, p)
		}
	}
	return out
}

func testArtifact() delivery.Artifact {
	return delivery.Artifact{
		Namespace: "team-a", Name: "app",
		URL: "oci://localhost:5000/workloads/app", Tag: "1.0.0",
		Digest: "sha256:" + "ab12cd34ef56ab12cd34ef56ab12cd34ef56ab12cd34ef56ab12cd34ef56ab12",
	}
}

func testTarget() delivery.Target {
	cluster := &platformv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "local"}}
	cluster.Spec.GitOps = platformv1alpha1.ClusterGitOps{Engine: platformv1alpha1.GitOpsEngineFlux, FluxInterval: &metav1.Duration{Duration: 30 * time.Second}}
	return delivery.Target{
		Spec:    gitopsv1alpha1.ArtifactTarget{Cluster: "local", Namespace: "flux-system", Path: "./", Prune: ptr.To(true)},
		Cluster: cluster,
	}
}

// fluxStatus is a Flux object as the target holds it after Flux reported on it.
func fluxStatus(t *testing.T, obj runtime.Object) *unstructured.Unstructured {
	t.Helper()
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: content}
}

// readyCondition is a Ready condition of a Flux object.
func readyCondition(status metav1.ConditionStatus, reason, message string) []metav1.Condition {
	return []metav1.Condition{{Type: "Ready", Status: status, Reason: reason, Message: message, LastTransitionTime: metav1.Now()}}
}

var errUnreachable = errors.New("cluster local: the API server at https://127.0.0.1:1 does not answer")
