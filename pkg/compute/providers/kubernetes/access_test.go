package kubernetes

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"

	"github.com/plinth-dev/plinth/pkg/apis/compute/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/errkind"
)

// roleBinding binds a role (a ClusterRole unless kind says otherwise) in a namespace.
func roleBinding(namespace, name, kind, role string, subjects ...rbacv1.Subject) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: kind, Name: role},
		Subjects:   subjects,
	}
}

func user(name string) rbacv1.Subject {
	return rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: name}
}

// teamA is what the namespace of tenantCompute() holds: alice edits it, a group and a CI
// service account administer it (the account named without its namespace, as a RoleBinding
// may), and carol only views it. The bindings elsewhere or to a Role do not make editors.
func teamA() []*rbacv1.RoleBinding {
	return []*rbacv1.RoleBinding{
		roleBinding("team-a", "alice-edit", "ClusterRole", "edit", user("alice")),
		roleBinding("team-a", "admins", "ClusterRole", "admin",
			rbacv1.Subject{Kind: rbacv1.GroupKind, Name: "team-a-admins"}, // group left to the API server's default
			rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: "ci"},
			user("alice")),
		roleBinding("team-a", "carol-view", "ClusterRole", "view", user("carol")),
		roleBinding("team-a", "edit-role", "Role", "edit", user("mallory")),
		roleBinding("team-b", "bob-edit", "ClusterRole", "edit", user("bob")),
	}
}

// teamAEditors are teamA's editors as the provider's RoleBinding names them.
var teamAEditors = []rbacv1.Subject{
	{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: "team-a-admins"},
	{Kind: rbacv1.ServiceAccountKind, Namespace: "team-a", Name: "ci"},
	user("alice"),
}

func TestSecretAccess(t *testing.T) {
	tc := tenantCompute()
	role, binding := secretAccess(tc, teamA())

	wantMeta := metav1.ObjectMeta{Name: "plinth-tenant-secrets", Namespace: "tenant-shop", Labels: ownLabels(tc)}
	wantRole := &rbacv1.Role{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"},
		ObjectMeta: wantMeta,
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"},
			Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}}},
	}
	if diff := cmp.Diff(wantRole, role); diff != "" {
		t.Errorf("role (-want +got):\n%s", diff)
	}
	wantBinding := &rbacv1.RoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
		ObjectMeta: wantMeta,
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "plinth-tenant-secrets"},
		Subjects:   teamAEditors,
	}
	if diff := cmp.Diff(wantBinding, binding); diff != "" {
		t.Errorf("role binding (-want +got):\n%s", diff)
	}

	// The same bindings in another order give the same subjects.
	reversed := teamA()
	slices.Reverse(reversed)
	if _, again := secretAccess(tc, reversed); !slices.Equal(again.Subjects, teamAEditors) {
		t.Errorf("reversed bindings: subjects %v", again.Subjects)
	}

	// No editors, or only viewers and subjects RBAC does not know: nobody.
	for name, bindings := range map[string][]*rbacv1.RoleBinding{
		"none":    nil,
		"viewers": {roleBinding("team-a", "carol-view", "ClusterRole", "view", user("carol"))},
		"unknown kind": {roleBinding("team-a", "odd", "ClusterRole", "edit",
			rbacv1.Subject{Kind: "Robot", Name: "r2"})},
		"another API group's role": {{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "x"},
			RoleRef: rbacv1.RoleRef{APIGroup: "example.com", Kind: "ClusterRole", Name: "edit"}, Subjects: []rbacv1.Subject{user("eve")}}},
	} {
		if _, b := secretAccess(tc, bindings); len(b.Subjects) != 0 {
			t.Errorf("%s: subjects %v", name, b.Subjects)
		}
	}
}

// rbacWrites are the writes to Roles and RoleBindings.
func rbacWrites(c *kubefake.Clientset) []string {
	var out []string
	for _, w := range writes(c) {
		if _, resource, _ := strings.Cut(w, " "); resource == "roles" || resource == "rolebindings" {
			out = append(out, w)
		}
	}
	return out
}

func subjectsOf(t *testing.T, f *fixture) []rbacv1.Subject {
	t.Helper()
	b, err := f.kube.RbacV1().RoleBindings("tenant-shop").Get(context.Background(), "plinth-tenant-secrets", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the secret writers' RoleBinding: %v", err)
	}
	return b.Subjects
}

func TestProvisionLetsTheEditorsWriteSecrets(t *testing.T) {
	var objects []runtime.Object
	for _, b := range teamA() {
		objects = append(objects, b)
	}
	f := newFixture(t, nil, objects...)
	ctx := context.Background()
	tc := tenantCompute()
	provision(t, f.provider, tc)
	if got := rbacWrites(f.kube); !slices.Equal(got, []string{"patch roles", "patch rolebindings"}) {
		t.Errorf("Provision wrote %v to RBAC", got)
	}
	role, err := f.kube.RbacV1().Roles("tenant-shop").Get(ctx, "plinth-tenant-secrets", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !ownedBy(role, tc) || len(role.Rules) != 1 || !slices.Equal(role.Rules[0].Resources, []string{"secrets"}) {
		t.Errorf("role %+v", role)
	}
	if got := subjectsOf(t, f); !slices.Equal(got, teamAEditors) {
		t.Errorf("subjects %v, want %v", got, teamAEditors)
	}
	// The provider grants access to Secrets; it reads none.
	for _, a := range f.kube.Actions() {
		if a.GetResource().Resource == "secrets" {
			t.Errorf("the provider touched secrets: %s", a.GetVerb())
		}
	}

	// Unchanged: nothing is sent, and an update finds nothing to change.
	f.caughtUp(t, tc)
	provision(t, f.provider, tc)
	if got := f.kube.Actions(); len(got) != 0 {
		t.Errorf("the second Provision sent %v", got)
	}

	// A new editor of team-a gets access at the next Update, which is no change of the
	// compute; bob's own namespace does not count.
	if _, err := f.kube.RbacV1().RoleBindings("team-a").Create(ctx,
		roleBinding("team-a", "dave-edit", "ClusterRole", "edit", user("dave")), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.caughtUp(t, tc)
	res, err := f.provider.Update(ctx, tc)
	if err != nil || res.Status != v1alpha1.UpdateStatusNoChanges {
		t.Errorf("Update = %+v, %v", res, err)
	}
	if got := rbacWrites(f.kube); !slices.Equal(got, []string{"patch rolebindings"}) {
		t.Errorf("a new editor: wrote %v", got)
	}
	if got, want := subjectsOf(t, f), append(slices.Clone(teamAEditors), user("dave")); !slices.Equal(got, want) {
		t.Errorf("subjects %v, want %v", got, want)
	}

	// Editors who go lose access; with none left nobody has it.
	bindings, err := f.kube.RbacV1().RoleBindings("team-a").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bindings.Items {
		if err := f.kube.RbacV1().RoleBindings("team-a").Delete(ctx, b.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	f.caughtUp(t, tc)
	if _, err := f.provider.Update(ctx, tc); err != nil {
		t.Fatal(err)
	}
	if got := subjectsOf(t, f); len(got) != 0 {
		t.Errorf("subjects without editors: %v", got)
	}

	// Someone deleting the RoleBinding does not keep it away.
	if err := f.kube.RbacV1().RoleBindings("tenant-shop").Delete(ctx, "plinth-tenant-secrets", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.caughtUp(t, tc)
	if _, err := f.provider.Update(ctx, tc); err != nil {
		t.Fatal(err)
	}
	subjectsOf(t, f)
}

func TestNamedClusterGrantsNothing(t *testing.T) {
	edge := kubefake.NewClientset()
	var objects []runtime.Object
	for _, b := range teamA() {
		objects = append(objects, b)
	}
	f := newFixture(t, &fakeClusters{clusters: map[string]*kubefake.Clientset{"edge": edge}}, objects...)
	ctx := context.Background()
	provision(t, f.provider, tenantCompute(withConfig(`{"cluster": "edge"}`)))
	for name, c := range map[string]*kubefake.Clientset{"edge": edge, "local": f.kube} {
		if got := rbacWrites(c); len(got) != 0 {
			t.Errorf("%s: wrote %v", name, got)
		}
		if _, err := c.RbacV1().RoleBindings("tenant-shop").Get(ctx, "plinth-tenant-secrets", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("%s: the secret writers' RoleBinding: %v", name, err)
		}
	}
	if _, err := edge.AppsV1().Deployments("tenant-shop").Get(ctx, "shop", metav1.GetOptions{}); err != nil {
		t.Errorf("the tenant does not run on edge: %v", err)
	}
}

// Destroy deletes the namespace, and the Role and RoleBinding with it: it needs no other
// request, and a later Provision grants again.
func TestDestroyLeavesTheGrantToTheNamespace(t *testing.T) {
	f := newFixture(t, nil, teamA()[0])
	ctx := context.Background()
	tc := tenantCompute()
	provision(t, f.provider, tc)
	f.caughtUp(t, tc)
	if err := f.provider.Destroy(ctx, tc); !errkind.IsWaiting(err) {
		t.Fatalf("Destroy = %v, want it in progress until the namespace is gone", err)
	}
	if got := writes(f.kube); !slices.Equal(got, []string{"delete namespaces"}) {
		t.Errorf("Destroy wrote %v", got)
	}
	f.caughtUp(t, tc)
	if err := f.provider.Destroy(ctx, tc); err != nil {
		t.Fatalf("Destroy once the namespace is gone: %v", err)
	}
	provision(t, f.provider, tc)
	if got := rbacWrites(f.kube); !slices.Equal(got, []string{"patch roles", "patch rolebindings"}) {
		t.Errorf("Provision after Destroy wrote %v to RBAC", got)
	}
}
