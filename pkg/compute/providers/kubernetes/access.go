package kubernetes

import (
	"cmp"
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/plinth-dev/plinth/pkg/apis/compute/v1alpha1"
)

// secretWriters names the Role and the RoleBinding through which, on the cluster Plinth
// serves, the people who may edit a TenantCompute's namespace write the Secrets its
// kubernetes-secret references name in namespace tenant-<tenantID>.
const secretWriters = "plinth-tenant-secrets"

// editorRoles are the ClusterRoles whose RoleBindings in a TenantCompute's namespace make
// their subjects its editors: Kubernetes' aggregated tenant roles, which include
// TenantComputes. view is not one of them: reading a TenantCompute does not make one its
// owner.
var editorRoles = []string{"admin", "edit"}

// secretWriterRules are all the Role grants: the Secrets of the tenant's namespace, nothing
// else (not the Deployment, not the pods, which the provider alone keeps).
func secretWriterRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{{
		APIGroups: []string{""},
		Resources: []string{"secrets"},
		Verbs:     []string{"get", "list", "watch", "create", "update", "patch", "delete"},
	}}
}

// secretAccess is the Role and RoleBinding that let the editors of tc's namespace write the
// tenant's Secrets: bindings are the RoleBindings of tc's namespace, and the subjects of those
// that bind admin or edit become the RoleBinding's, deduplicated and sorted. With none, the
// RoleBinding has no subjects, which takes away what it granted before.
//
// Why a grant at all: a Pod reads only Secrets of its own namespace, and the provider copies no
// secret value, so the tenant puts the Secret in tenant-<tenantID>; without this nobody but a
// cluster admin could. Only on the cluster Plinth serves: the identities of a TenantCompute's
// namespace are that cluster's, and mean nothing (or someone else) on another cluster.
func secretAccess(tc *v1alpha1.TenantCompute, bindings []*rbacv1.RoleBinding) (*rbacv1.Role, *rbacv1.RoleBinding) {
	namespace := v1alpha1.TenantNamespace(tc.Spec.TenantID)
	// The provider's labels only: the grant is not the tenant's object to label.
	meta := func() metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: secretWriters, Namespace: namespace, Labels: ownLabels(tc)}
	}
	role := &rbacv1.Role{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "Role"},
		ObjectMeta: meta(),
		Rules:      secretWriterRules(),
	}
	binding := &rbacv1.RoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "RoleBinding"},
		ObjectMeta: meta(),
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: secretWriters},
		Subjects:   editors(tc.Namespace, bindings),
	}
	return role, binding
}

// editors are the subjects of the bindings in namespace that bind ClusterRole admin or edit,
// each once, sorted by kind, namespace and name. A ServiceAccount named without a namespace
// is the binding's namespace's, and is written with it: the same subject in another
// namespace's RoleBinding would otherwise name that namespace's account.
func editors(namespace string, bindings []*rbacv1.RoleBinding) []rbacv1.Subject {
	var out []rbacv1.Subject
	for _, b := range bindings {
		if b.Namespace != namespace || b.RoleRef.APIGroup != rbacv1.GroupName || b.RoleRef.Kind != "ClusterRole" ||
			!slices.Contains(editorRoles, b.RoleRef.Name) {
			continue
		}
		for _, s := range b.Subjects {
			switch s.Kind {
			case rbacv1.ServiceAccountKind:
				s.APIGroup = ""
				if s.Namespace == "" {
					s.Namespace = b.Namespace
				}
			case rbacv1.UserKind, rbacv1.GroupKind:
				// Users and groups have no namespace; the API server defaults their group.
				s.APIGroup, s.Namespace = rbacv1.GroupName, ""
			default:
				continue // not a subject RBAC knows: it grants nobody anything
			}
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b rbacv1.Subject) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return slices.CompactFunc(out, func(a, b rbacv1.Subject) bool { return a == b })
}
