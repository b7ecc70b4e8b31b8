package resourcebinding

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
)

// What a template provisioner's manifests may create. They are applied with plinth-controller's
// identity, which may do far more than a namespace's editors (read every Secret, run pods under
// its own service account), while a Provisioner is written by a platform administrator whose own
// rights are the score.dev API, and its state lives in the tenant's namespace, where the tenant
// can edit it. So manifests are held to what a namespace's editors could create themselves: the
// kinds below, in the binding's namespace only, with pods under the namespace's default service
// account, and never in the cluster's or the platform's own namespaces.
var allowedKinds = map[schema.GroupKind]bool{
	{Kind: "Secret"}: true, {Kind: "ConfigMap"}: true, {Kind: "Service"}: true, {Kind: "PersistentVolumeClaim"}: true,
	{Group: "apps", Kind: "Deployment"}: true, {Group: "apps", Kind: "StatefulSet"}: true,
	{Group: "batch", Kind: "Job"}:                 true,
	{Group: "networking.k8s.io", Kind: "Ingress"}: true, {Group: "networking.k8s.io", Kind: "NetworkPolicy"}: true,
	{Group: "gateway.networking.k8s.io", Kind: "HTTPRoute"}: true,
	{Group: "policy", Kind: "PodDisruptionBudget"}:          true,
	{Group: "autoscaling", Kind: "HorizontalPodAutoscaler"}: true,
}

// protectedNamespaces are where template provisioners create nothing: the cluster's own and
// the platform's, whose Secrets and service accounts are plinth-controller's.
var protectedNamespaces = map[string]bool{"kube-system": true, "kube-public": true, "kube-node-lease": true, "plinth-system": true}

// AllowedKinds lists the kinds template manifests may create, for messages and docs.
func AllowedKinds() []string {
	var out []string
	for gk := range allowedKinds {
		out = append(out, gk.String())
	}
	sort.Strings(out)
	return out
}

// checkManifests refuses manifests outside what template provisioners may create, with one
// sentence that completes "The provisioner URI ...".
func checkManifests(b *v1b1.ResourceBinding, manifests []map[string]interface{}) error {
	if len(manifests) > 0 && protectedNamespaces[b.Namespace] {
		return fmt.Errorf("may not create objects in namespace %s, which belongs to the cluster or the platform.", b.Namespace)
	}
	for i, m := range manifests {
		obj := unstructured.Unstructured{Object: m}
		gk := obj.GroupVersionKind().GroupKind()
		if !allowedKinds[gk] {
			return fmt.Errorf("may not create %s (manifests[%d]); template provisioners create %s.", describeKind(gk), i, strings.Join(AllowedKinds(), ", "))
		}
		if ns := obj.GetNamespace(); ns != "" && ns != b.Namespace {
			return fmt.Errorf("may not create objects in namespace %s (manifests[%d]), only in the resource's namespace.", ns, i)
		}
		for _, field := range []string{"serviceAccountName", "serviceAccount"} {
			sa, _, _ := unstructured.NestedString(m, "spec", "template", "spec", field)
			if sa != "" && sa != "default" {
				return fmt.Errorf("may not run pods as service account %s (manifests[%d]); they run as the namespace's default.", sa, i)
			}
		}
	}
	return nil
}

func describeKind(gk schema.GroupKind) string {
	if gk.Kind == "" {
		return "an object without a kind"
	}
	return "a " + gk.String()
}

// applyError is an apply's failure without the API server's message, which may quote a field's
// value (drawn, perhaps, from the state): the object, the status code and the reason.
func applyError(kind, name string, err error) error {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return fmt.Errorf("applying %s %s: %d %s", kind, name, status.Status().Code, status.Status().Reason)
	}
	return fmt.Errorf("applying %s %s: %w", kind, name, err)
}

// secretKey names state entries that hold secrets.
var secretKey = regexp.MustCompile(`(?i)pass|secret|token|key|cred`)

// holdsSecretOf reports whether value contains a string the state keeps under a key that names
// a secret (password, secret, token, key, credential), of at least 8 characters: a template
// that writes its generated password into a plain output.
func holdsSecretOf(value string, state map[string]interface{}) bool {
	found := false
	var walk func(key string, v interface{})
	walk = func(key string, v interface{}) {
		switch x := v.(type) {
		case string:
			if len(x) >= 8 && secretKey.MatchString(key) && strings.Contains(value, x) {
				found = true
			}
		case map[string]interface{}:
			for k, e := range x {
				walk(k, e)
			}
		case []interface{}:
			for _, e := range x {
				walk(key, e)
			}
		}
	}
	walk("", state)
	return found
}
