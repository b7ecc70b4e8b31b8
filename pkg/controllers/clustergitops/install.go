package clustergitops

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	platformv1alpha1 "github.com/plinth-dev/plinth/pkg/apis/platform/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/gitops/fluxinstall"
)

// InstallFieldManager is the server-side apply field manager of the objects of an install on
// a target cluster.
const InstallFieldManager = "plinth-gitops"

// installPoll is how soon a cluster whose install is under way is looked at again: CRDs are
// established and Deployments become Available within seconds, far sooner than a probe.
const installPoll = 2 * time.Second

// installing says whether plinth-controller installs (or goes on installing) Flux on a
// cluster after detection found f: installFlux is set, and either a CRD Flux needs is missing
// or the Flux there is the one plinth-controller installed and is not running yet.
func installing(cl *platformv1alpha1.Cluster, f finding) bool {
	if !cl.Spec.GitOps.InstallFlux {
		return false
	}
	return (f.reason == platformv1alpha1.ReasonFluxNotInstalled && f.crdMissing) || (f.reason == platformv1alpha1.ReasonFluxNotRunning && f.installed)
}

// withInstallHint adds to a FluxNotInstalled finding of a missing CRD, on a cluster without
// installFlux, that installFlux would install Flux.
func withInstallHint(f finding) finding {
	if f.reason == platformv1alpha1.ReasonFluxNotInstalled && f.crdMissing {
		f.message = strings.TrimSuffix(f.message, ".") + "; spec.gitOps.installFlux: true would let plinth-controller install Flux " + fluxinstall.Version + "."
	}
	return f
}

// install applies Flux's objects to the cluster after detection found f (see installing) and
// returns the finding to report: FluxInstalling while the install is under way, otherwise why
// it could not go on. The CRDs go first; the rest only once they are established, since a Flux
// controller exits when a kind it watches is not served. Objects that exist without
// plinth-controller's managed-by label are left as they are, and a CRD among them means a Flux
// installed otherwise, which is not touched at all. The error is returned for a retry.
func (c *Controller) install(ctx context.Context, cluster string, f finding) (finding, error) {
	if c.manifests == nil {
		return finding{status: metav1.ConditionFalse, reason: platformv1alpha1.ReasonFluxInstallUnavailable, components: f.components,
			message: "Flux cannot be installed on the cluster because plinth-controller was started without --flux-manifests-dir, the directory of Flux's CRDs."}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, detectTimeout)
	defer cancel()
	dyn, _, err := c.clients.For(ctx, cluster)
	if err != nil {
		return unreachable(err), nil
	}
	crds := c.manifests.CRDs()
	for _, o := range crds {
		existing, err := dyn.Resource(o.Resource).Get(ctx, o.GetName(), metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return installFailed(err, o, f), err
		}
		if err == nil && !fluxinstall.Managed(existing) {
			return finding{status: metav1.ConditionFalse, reason: platformv1alpha1.ReasonFluxNotInstalled, components: f.components,
				message: fmt.Sprintf("Flux is not installed on the cluster and plinth-controller leaves it as it is because the CustomResourceDefinition %s exists without the label %s=%s.", o.GetName(), fluxinstall.LabelManagedBy, fluxinstall.ManagedBy)}, nil
		}
	}
	var pending []string
	for _, o := range crds {
		applied, err := apply(ctx, dyn, o)
		if err != nil {
			return installFailed(err, o, f), err
		}
		if !established(applied) {
			pending = append(pending, o.GetName())
		}
	}
	if len(pending) > 0 {
		return finding{status: metav1.ConditionFalse, reason: platformv1alpha1.ReasonFluxInstalling, components: f.components,
			message: fmt.Sprintf("Flux %s's CRDs are applied to the cluster and plinth-controller waits until %s established.", fluxinstall.Version, plural(pending))}, nil
	}
	for _, o := range fluxinstall.Workloads() {
		existing, err := dyn.Resource(o.Resource).Namespace(o.GetNamespace()).Get(ctx, o.GetName(), metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return installFailed(err, o, f), err
		}
		if err == nil && !fluxinstall.Managed(existing) {
			continue // someone else's: used as it is (a namespace flux-system created beforehand)
		}
		if _, err := apply(ctx, dyn, o); err != nil {
			return installFailed(err, o, f), err
		}
	}
	return finding{status: metav1.ConditionFalse, reason: platformv1alpha1.ReasonFluxInstalling, components: f.components,
		message: fmt.Sprintf("Flux's source-controller and kustomize-controller %s are applied to the namespace %s and plinth-controller waits until their Deployments are Available.", fluxinstall.Version, fluxinstall.Namespace)}, nil
}

// apply server-side applies one object of the install, taking over fields other managers set
// on it (only objects labelled as plinth-controller's are applied).
func apply(ctx context.Context, dyn dynamic.Interface, o fluxinstall.Object) (*unstructured.Unstructured, error) {
	return dyn.Resource(o.Resource).Namespace(o.GetNamespace()).Apply(ctx, o.GetName(), o.Unstructured,
		metav1.ApplyOptions{FieldManager: InstallFieldManager, Force: true})
}

// established says whether a CRD's Established condition is True.
func established(crd *unstructured.Unstructured) bool {
	conditions, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	return slices.ContainsFunc(conditions, func(c any) bool {
		m, ok := c.(map[string]any)
		return ok && m["type"] == "Established" && m["status"] == "True"
	})
}

// installFailed is the finding of a request of the install that failed.
func installFailed(err error, o fluxinstall.Object, f finding) finding {
	what := fmt.Sprintf("%s %s", o.GetKind(), o.GetName())
	if o.GetNamespace() != "" {
		what = fmt.Sprintf("%s %s/%s", o.GetKind(), o.GetNamespace(), o.GetName())
	}
	if apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) {
		return finding{status: metav1.ConditionFalse, reason: platformv1alpha1.ReasonFluxInstallFailed, components: f.components,
			message: fmt.Sprintf("Flux cannot be installed on the cluster because its credentials may not read or apply the %s.", what)}
	}
	return finding{status: metav1.ConditionFalse, reason: platformv1alpha1.ReasonFluxInstallFailed, components: f.components,
		message: fmt.Sprintf("Flux could not be installed on the cluster: applying the %s failed: %s.", what, strings.TrimSuffix(cause(err), "."))}
}

// plural names CRDs in a sentence with their verb.
func plural(names []string) string {
	if len(names) == 1 {
		return names[0] + " is"
	}
	return strings.Join(names, ", ") + " are"
}
