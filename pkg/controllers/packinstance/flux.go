package packinstance

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/plinth-dev/plinth/pkg/apis/common"
	"github.com/plinth-dev/plinth/pkg/apis/common/conditions"
	gitopsv1alpha1 "github.com/plinth-dev/plinth/pkg/apis/gitops/v1alpha1"
	infrav1alpha1 "github.com/plinth-dev/plinth/pkg/apis/infrastructure/v1alpha1"
	platformv1alpha1 "github.com/plinth-dev/plinth/pkg/apis/platform/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/gitops/manifests"
	"github.com/plinth-dev/plinth/pkg/message"
	"github.com/plinth-dev/plinth/pkg/packs/revisions"
	"github.com/plinth-dev/plinth/pkg/packs/version"
)

// LabelInstance marks the OCIArtifact that carries an instance to a Flux cluster with the
// instance's namespace and name hash, so that the artifact wakes its instance.
const (
	LabelInstance          = "infrastructure.ontai.dev/instance"
	AnnotationInstance     = "infrastructure.ontai.dev/instance"
	fluxArtifactNamePrefix = "pack-"
)

// FluxArtifact names the OCIArtifact of an instance: in the namespace of the cluster's
// registry (an OCIArtifact pushes to a registry of its own namespace), pack-{instance}-{hash of
// the pack's namespace and the instance}, since packs of two namespaces may share a name and a
// long name is cut to fit 63 characters.
func FluxArtifact(inst *infrav1alpha1.InfrastructurePackInstance) string {
	// The hash covers what the name may lose: the pack's namespace, and the whole instance name
	// when it is cut short.
	sum := sha256.Sum256([]byte(inst.Labels[infrav1alpha1.LabelPackNamespace] + "/" + inst.Name))
	name := fluxArtifactNamePrefix + inst.Name
	if len(name) > 63-9 {
		name = name[:63-9]
	}
	return strings.TrimRight(name, "-") + "-" + hex.EncodeToString(sum[:4])
}

// artifactInstance maps an OCIArtifact to the instance it carries.
func artifactInstance(obj interface{}) []cacheKey {
	art, ok := artifactOf(obj)
	if !ok {
		return nil
	}
	ref := art.Annotations[AnnotationInstance]
	ns, name, found := strings.Cut(ref, "/")
	if !found {
		return nil
	}
	return []cacheKey{{Namespace: ns, Name: name}}
}

// fluxVersion is the OCIArtifact version of a revision: the pack's X.Y.Z with the revision
// number as a prerelease, unique per revision, so that a re-render of the same pack version
// never meets the registry's rule that a pushed version keeps its content.
func fluxVersion(rev *revisions.Revision) string {
	v, err := version.Parse(rev.Version)
	if err != nil {
		return fmt.Sprintf("0.0.0-rev.%d", rev.Number)
	}
	return fmt.Sprintf("%d.%d.%d-rev.%d", v.Major, v.Minor, v.Patch, rev.Number)
}

// deliverFlux makes the revision an OCIArtifact that targets the cluster and reports what Flux
// applied. done is false while the artifact is not pushed or Flux has not applied it.
func (c *Controller) deliverFlux(ctx context.Context, inst *infrav1alpha1.InfrastructurePackInstance, pack *infrav1alpha1.InfrastructureClusterPack,
	cluster *platformv1alpha1.Cluster, rev *revisions.Revision) (bool, error) {
	gitOps := cluster.Status.GitOps
	if gitOps == nil || gitOps.Registry == "" {
		err := fmt.Errorf("cluster %s uses Flux but has no registry to push the pack to (spec.gitOps.registryEnabled)", cluster.Name)
		c.failed(inst, err)
		return false, nil // a Cluster change wakes the instance
	}
	registryNamespace, registry, _ := strings.Cut(gitOps.Registry, "/")
	_, mapper, err := c.clients.For(ctx, cluster.Name)
	if err != nil {
		c.failed(inst, err)
		return false, err
	}
	objs, err := Place(ObjectsFor(rev, cluster), pack.Spec.TargetNamespace, mapper)
	if err != nil {
		c.failed(inst, err)
		return false, err
	}
	if err := c.ensureNamespace(ctx, cluster.Name, releaseNamespace(pack, objs)); err != nil {
		c.failed(inst, err)
		return false, err
	}
	raws := make([]common.RawObject, 0, len(objs))
	for _, o := range objs {
		raw, err := o.MarshalJSON()
		if err != nil {
			return false, err
		}
		raws = append(raws, common.RawObject{Raw: raw})
	}
	name := FluxArtifact(inst)
	want := gitopsv1alpha1.OCIArtifactSpec{
		RegistryRef: gitopsv1alpha1.LocalObjectReference{Name: registry},
		Name:        name,
		Repository:  "packs/" + inst.Labels[infrav1alpha1.LabelPackNamespace] + "/" + inst.Spec.ClusterPackRef + "/" + cluster.Name,
		Version:     fluxVersion(rev),
		Manifests:   raws,
		Targets:     []gitopsv1alpha1.ArtifactTarget{{Cluster: cluster.Name, Prune: ptr.To(true)}},
	}
	client := c.plinth.GitopsV1alpha1().OCIArtifacts(registryNamespace)
	art, err := c.artifacts.OCIArtifacts(registryNamespace).Get(name)
	switch {
	case apierrors.IsNotFound(err):
		created := &gitopsv1alpha1.OCIArtifact{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: registryNamespace,
				Labels:      map[string]string{infrav1alpha1.LabelPack: inst.Spec.ClusterPackRef, infrav1alpha1.LabelCluster: cluster.Name},
				Annotations: map[string]string{AnnotationInstance: inst.Namespace + "/" + inst.Name}},
			Spec: want,
		}
		if _, err := client.Create(ctx, created, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			c.failed(inst, err)
			return false, err
		}
		c.progressing(inst, rev, "Pushing the revision to the cluster's registry for Flux.")
		return false, nil
	case err != nil:
		return false, err
	}
	if art.Spec.Version != want.Version || !sameManifests(art.Spec.Manifests, want.Manifests) {
		updated := art.DeepCopy()
		updated.Spec.Version, updated.Spec.Tag, updated.Spec.Manifests = want.Version, "", want.Manifests
		if _, err := client.Update(ctx, updated, metav1.UpdateOptions{}); err != nil {
			c.failed(inst, err)
			return false, err
		}
		c.progressing(inst, rev, "Pushing the revision to the cluster's registry for Flux.")
		return false, nil
	}
	if art.Status.PushedVersion != want.Version {
		c.progressing(inst, rev, "Pushing the revision to the cluster's registry for Flux.")
		return false, nil
	}
	// A target reports what it applied as <tag>@<digest of the pushed manifest>, as every
	// OCIArtifact target does (delivery.Artifact.Revision); status.revision is the content's
	// revision annotation, which no target reports. The tag is the version: deliverFlux sets
	// none, and the API server defaults it so.
	applied := want.Version + "@" + art.Status.Digest
	for _, t := range art.Status.Targets {
		if t.Cluster != cluster.Name {
			continue
		}
		if t.Ready && t.Revision == applied {
			inst.Status.DeployedResources = fluxResources(t, objs)
			c.delivered(inst, pack, rev, fmt.Sprintf("Flux applied revision %d (version %s): %s.", rev.Number, rev.Version, objects(len(inst.Status.DeployedResources))))
			return true, nil
		}
		if t.Message != "" {
			c.progressing(inst, rev, "Flux has not applied it yet: "+t.Message)
			return false, nil
		}
	}
	c.progressing(inst, rev, "Waiting for Flux to apply the revision.")
	return false, nil
}

// fluxResources are the deployedResources of a revision Flux applied: the target's inventory
// when it reports one, else the revision's placed objects. An OCIArtifact's Flux target carries
// no inventory (kustomize-controller keeps it in the Kustomization on the cluster), and Ready at
// the artifact's revision means kustomize-controller applied every object of the artifact,
// which are these, in these namespaces.
func fluxResources(t gitopsv1alpha1.ArtifactTargetStatus, objs []manifests.Object) []infrav1alpha1.DeployedResource {
	if len(t.Inventory) > 0 {
		return resources(t.Inventory)
	}
	out := make([]infrav1alpha1.DeployedResource, 0, len(objs))
	for _, o := range objs {
		out = append(out, infrav1alpha1.DeployedResource{APIVersion: o.GetAPIVersion(), Kind: o.GetKind(), Namespace: o.GetNamespace(), Name: o.GetName()})
	}
	return out
}

// sameManifests says whether two lists of manifests hold the same JSON values. Bytes alone
// cannot tell: the API server re-encodes what it stores (compacted, without the newline that
// ends an encoder's output, HTML characters escaped), so an artifact read back never has the
// bytes it was written with, and comparing them would update it on every pass and never see
// Flux apply it. Numbers are compared as written, as the registry's rule that a pushed
// version keeps its content compares them.
func sameManifests(a, b []common.RawObject) bool {
	if len(a) != len(b) {
		return false
	}
	decode := func(raw []byte) (interface{}, error) {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var v interface{}
		err := dec.Decode(&v)
		return v, err
	}
	for i := range a {
		if bytes.Equal(a[i].Raw, b[i].Raw) {
			continue
		}
		va, errA := decode(a[i].Raw)
		vb, errB := decode(b[i].Raw)
		if errA != nil || errB != nil || !reflect.DeepEqual(va, vb) {
			return false
		}
	}
	return true
}

// progressing records a delivery under way.
func (c *Controller) progressing(inst *infrav1alpha1.InfrastructurePackInstance, rev *revisions.Revision, msg string) {
	conditions.Set(&inst.Status.Conditions, inst.Generation, infrav1alpha1.ConditionProgressing, metav1.ConditionTrue, infrav1alpha1.ReasonDelivering,
		message.Sentence(fmt.Sprintf("Delivering revision %d (version %s). %s", rev.Number, rev.Version, msg)))
	if inst.Status.Revision != rev.Number {
		conditions.Set(&inst.Status.Conditions, inst.Generation, infrav1alpha1.ConditionReady, metav1.ConditionFalse, infrav1alpha1.ReasonDelivering,
			fmt.Sprintf("Delivering revision %d (version %s).", rev.Number, rev.Version))
	}
}

// removeFlux deletes the instance's OCIArtifact (its finalizer has Flux prune what it applied)
// and says whether it is gone.
func (c *Controller) removeFlux(ctx context.Context, inst *infrav1alpha1.InfrastructurePackInstance, cluster *platformv1alpha1.Cluster) (bool, error) {
	if cluster.Status.GitOps == nil || cluster.Status.GitOps.Registry == "" {
		return true, nil
	}
	registryNamespace, _, _ := strings.Cut(cluster.Status.GitOps.Registry, "/")
	name := FluxArtifact(inst)
	art, err := c.artifacts.OCIArtifacts(registryNamespace).Get(name)
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	if art.DeletionTimestamp == nil {
		if err := c.plinth.GitopsV1alpha1().OCIArtifacts(registryNamespace).Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return false, err
		}
	}
	return false, nil
}
