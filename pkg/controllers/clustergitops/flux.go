package clustergitops

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	platformv1alpha1 "github.com/plinth-dev/plinth/pkg/apis/platform/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/gitops/fluxinstall"
)

// component is one Flux controller plinth-controller needs on a cluster, and the CRD of the
// kind it serves.
type component struct {
	name string
	crd  string
}

// components are the Flux controllers an OCIArtifact's delivery needs, in status order.
var components = []component{
	{name: "source-controller", crd: "ocirepositories.source.toolkit.fluxcd.io"},
	{name: "kustomize-controller", crd: "kustomizations.kustomize.toolkit.fluxcd.io"},
}

// leasesResource is where Flux's controllers hold their leader election. (Flux's CRDs and
// Deployments are read through fluxinstall's resources, and its version from
// fluxinstall.LabelVersion, the label Flux's release manifests put on its objects.)
var leasesResource = schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}

// finding is what a detection found: the serving components and the FluxAvailable verdict.
type finding struct {
	components []platformv1alpha1.FluxComponent
	status     metav1.ConditionStatus
	reason     string
	message    string
	// crdMissing: a CRD Flux needs is absent (reason FluxNotInstalled), so an install can
	// provide it; a CRD that is there but too old belongs to a Flux installed otherwise.
	crdMissing bool
	// installed: every CRD Flux needs is there and labelled as installed by plinth-controller.
	installed bool
}

// detectFlux finds out whether Flux's source-controller and kustomize-controller serve a
// cluster: both CRDs serve v1, and each controller either has a Deployment of its name (in any
// namespace) that is Available — its version is the image tag — or holds its leader-election
// Lease, <controller>-leader-election (in the namespace of its pod, or of RUNTIME_NAMESPACE when
// run outside the cluster), still renewed as fresh says (a leaseTracker's freshness) — its
// version is its CRD's app.kubernetes.io/version label. The Lease is how controllers running
// outside the cluster (the local platform's) show they serve.
func detectFlux(ctx context.Context, dyn dynamic.Interface, fresh func(*coordinationv1.Lease) bool) finding {
	versions := map[string]string{}
	installed := true
	for _, comp := range components {
		crd, err := dyn.Resource(fluxinstall.CRDs).Get(ctx, comp.crd, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			f := notInstalled(fmt.Sprintf("Flux is not installed on the cluster: the CustomResourceDefinition %s is missing.", comp.crd))
			f.crdMissing = true
			return f
		}
		if err != nil {
			return failed(err, "customresourcedefinitions.apiextensions.k8s.io")
		}
		if !servesV1(crd) {
			return notInstalled(fmt.Sprintf("Flux on the cluster is too old: the CustomResourceDefinition %s does not serve v1.", comp.crd))
		}
		versions[comp.name] = crd.GetLabels()[fluxinstall.LabelVersion]
		installed = installed && fluxinstall.Managed(crd)
	}

	var found []platformv1alpha1.FluxComponent
	var missing []string
	for _, comp := range components {
		// By name in every namespace: Flux may be installed in any.
		deployments, err := dyn.Resource(fluxinstall.Deployments).List(ctx, byName(comp.name))
		if err != nil {
			return failed(err, "deployments.apps")
		}
		if version, ok := availableDeployment(deployments.Items, comp.name); ok {
			found = append(found, platformv1alpha1.FluxComponent{Name: comp.name, Version: version})
			continue
		}
		lease := comp.name + "-leader-election"
		leases, err := dyn.Resource(leasesResource).List(ctx, byName(lease))
		if err != nil {
			return failed(err, "leases.coordination.k8s.io")
		}
		if heldLease(leases.Items, lease, fresh) {
			found = append(found, platformv1alpha1.FluxComponent{Name: comp.name, Version: versions[comp.name]})
			continue
		}
		missing = append(missing, comp.name)
	}
	switch len(missing) {
	case 0:
		return finding{components: found, status: metav1.ConditionTrue, reason: platformv1alpha1.ReasonFluxRunning, installed: installed,
			message: fmt.Sprintf("Flux's %s and %s serve the cluster.", described(found[0]), described(found[1]))}
	case 1:
		return finding{components: found, status: metav1.ConditionFalse, reason: platformv1alpha1.ReasonFluxNotRunning, installed: installed,
			message: fmt.Sprintf("Flux is installed but its %s is not running: there is no Available Deployment named %[1]s and no Lease %[1]s-leader-election renewed within its lease duration.", missing[0])}
	default:
		return finding{components: found, status: metav1.ConditionFalse, reason: platformv1alpha1.ReasonFluxNotRunning, installed: installed,
			message: fmt.Sprintf("Flux is installed but its %s are not running: neither has an Available Deployment of its name or a Lease <name>-leader-election renewed within its lease duration.", strings.Join(missing, " and "))}
	}
}

// byName lists the objects of one name.
func byName(name string) metav1.ListOptions {
	return metav1.ListOptions{FieldSelector: "metadata.name=" + name}
}

func notInstalled(message string) finding {
	return finding{status: metav1.ConditionFalse, reason: platformv1alpha1.ReasonFluxNotInstalled, message: message}
}

// failed is the finding of a request that failed: refused credentials, or no answer.
func failed(err error, resource string) finding {
	if apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) {
		return finding{status: metav1.ConditionFalse, reason: platformv1alpha1.ReasonForbidden,
			message: fmt.Sprintf("The cluster's credentials may not list %s, which the detection of Flux reads.", resource)}
	}
	return unreachable(err)
}

// unreachable is the finding when the cluster could not be asked.
func unreachable(err error) finding {
	return finding{status: metav1.ConditionFalse, reason: platformv1alpha1.ReasonUnreachable,
		message: fmt.Sprintf("The cluster could not be asked whether Flux runs on it: %s.", strings.TrimSuffix(cause(err), "."))}
}

// cause is the innermost error's text: a URL client-go wraps around it repeats the server.
func cause(err error) string {
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		err = urlErr.Err
	}
	return err.Error()
}

func described(c platformv1alpha1.FluxComponent) string {
	if c.Version == "" {
		return c.Name
	}
	return c.Name + " " + c.Version
}

// servesV1 says whether a CRD serves version v1.
func servesV1(crd *unstructured.Unstructured) bool {
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	for _, v := range versions {
		m, ok := v.(map[string]any)
		if ok && m["name"] == "v1" && m["served"] == true {
			return true
		}
	}
	return false
}

// availableDeployment returns the version of an Available Deployment named name: the tag of
// its "manager" container's image (Flux's container name), or of its first container's.
func availableDeployment(items []unstructured.Unstructured, name string) (string, bool) {
	for i := range items {
		if items[i].GetName() != name {
			continue
		}
		var d appsv1.Deployment
		if runtime.DefaultUnstructuredConverter.FromUnstructured(items[i].Object, &d) != nil {
			continue
		}
		available := slices.ContainsFunc(d.Status.Conditions, func(c appsv1.DeploymentCondition) bool {
			return c.Type == appsv1.DeploymentAvailable && c.Status == corev1.ConditionTrue
		})
		if !available {
			continue
		}
		containers := d.Spec.Template.Spec.Containers
		if len(containers) == 0 {
			return "", true
		}
		image := containers[0].Image
		if i := slices.IndexFunc(containers, func(c corev1.Container) bool { return c.Name == "manager" }); i >= 0 {
			image = containers[i].Image
		}
		return imageTag(image), true
	}
	return "", false
}

// imageTag is the tag of an image reference, without a digest: ghcr.io/fluxcd/x:v1.9.6@sha256:…
// is v1.9.6; a reference without a tag has none.
func imageTag(image string) string {
	image, _, _ = strings.Cut(image, "@")
	slash := strings.LastIndex(image, "/")
	if colon := strings.LastIndex(image, ":"); colon > slash {
		return image[colon+1:]
	}
	return ""
}

// heldLease says whether a Lease named name, in any namespace, has a holder and is renewed, as
// fresh says. A controller that released its Lease (on shutdown) leaves no holder.
func heldLease(items []unstructured.Unstructured, name string, fresh func(*coordinationv1.Lease) bool) bool {
	for i := range items {
		if items[i].GetName() != name {
			continue
		}
		var l coordinationv1.Lease
		if runtime.DefaultUnstructuredConverter.FromUnstructured(items[i].Object, &l) != nil {
			continue
		}
		s := l.Spec
		if s.HolderIdentity == nil || *s.HolderIdentity == "" || s.RenewTime == nil || s.LeaseDurationSeconds == nil {
			continue
		}
		if fresh(&l) {
			return true
		}
	}
	return false
}
