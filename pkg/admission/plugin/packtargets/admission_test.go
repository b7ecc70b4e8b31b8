package packtargets

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/plinth-dev/plinth/pkg/apis/gitops"
	"github.com/plinth-dev/plinth/pkg/apis/infrastructure"
	infrastructurev1alpha1 "github.com/plinth-dev/plinth/pkg/apis/infrastructure/v1alpha1"
	platformv1alpha1 "github.com/plinth-dev/plinth/pkg/apis/platform/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/generated/clientset/versioned/fake"
	informers "github.com/plinth-dev/plinth/pkg/generated/informers/externalversions"
)

const namespace = "plinth-system"

// stored is a pack as the informer holds it: name in ns, depending on deps.
func stored(ns, name string, deps ...string) *infrastructurev1alpha1.InfrastructureClusterPack {
	return &infrastructurev1alpha1.InfrastructureClusterPack{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       infrastructurev1alpha1.InfrastructureClusterPackSpec{Version: "v1.0.0", TargetClusters: []string{"local"}, DependsOn: deps},
	}
}

// newPlugin serves the named Clusters and the given packs from informers' indexers, as the
// server's informers would.
func newPlugin(t *testing.T, packs []*infrastructurev1alpha1.InfrastructureClusterPack, clusters ...string) *Plugin {
	t.Helper()
	f := informers.NewSharedInformerFactory(fake.NewSimpleClientset(), 0)
	p := New()
	p.SetPlinthInformerFactory(f)
	if err := p.ValidateInitialization(); err != nil {
		t.Fatal(err)
	}
	for _, name := range clusters {
		if err := f.Platform().V1alpha1().Clusters().Informer().GetIndexer().Add(&platformv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, pack := range packs {
		if err := f.Infrastructure().V1alpha1().InfrastructureClusterPacks().Informer().GetIndexer().Add(pack); err != nil {
			t.Fatal(err)
		}
	}
	// The indexers are filled by hand: nothing lists, so the informers never count as synced.
	p.SetReadyFunc(func() bool { return true })
	return p
}

// pack is a pack being admitted to namespace.
func pack(name string, clusters []string, deps ...string) *infrastructure.InfrastructureClusterPack {
	return &infrastructure.InfrastructureClusterPack{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec:       infrastructure.InfrastructureClusterPackSpec{Version: "v1.0.0", TargetClusters: clusters, DependsOn: deps},
	}
}

// attrsOf is a request of dana, a platform administrator, on resource/subresource.
func attrsOf(obj, old runtime.Object, kind schema.GroupKind, resource schema.GroupResource, subresource string, op admission.Operation) admission.Attributes {
	return admission.NewAttributesRecord(obj, old, kind.WithVersion(""), namespace, obj.(metav1.Object).GetName(),
		resource.WithVersion(""), subresource, op, nil, false, &user.DefaultInfo{Name: "dana", Groups: []string{"platform:admins"}})
}

// attrs is a request on infrastructureclusterpacks.
func attrs(obj, old *infrastructure.InfrastructureClusterPack, op admission.Operation) admission.Attributes {
	var oldObj runtime.Object
	if old != nil {
		oldObj = old
	}
	return attrsOf(obj, oldObj, infrastructure.Kind("InfrastructureClusterPack"), infrastructure.Resource("infrastructureclusterpacks"), "", op)
}

// causes are the refusal's causes as "type field: message"; it fails the test unless err is a
// 422 about an InfrastructureClusterPack.
func causes(t *testing.T, err error) []string {
	t.Helper()
	if !apierrors.IsInvalid(err) {
		t.Fatalf("error %v, want 422 Invalid", err)
	}
	s := err.(apierrors.APIStatus).Status()
	if s.Details.Kind != "InfrastructureClusterPack" || s.Details.Group != infrastructure.GroupName {
		t.Errorf("details %+v", s.Details)
	}
	var out []string
	for _, c := range s.Details.Causes {
		out = append(out, string(c.Type)+" "+c.Field+": "+c.Message)
	}
	return out
}

var ctx = context.Background()

func TestCreatesNeedExistingClusters(t *testing.T) {
	p := newPlugin(t, nil, "local", "edge")
	if err := p.Validate(ctx, attrs(pack("ingress", []string{"local", "edge"}), nil, admission.Create), nil); err != nil {
		t.Fatalf("a pack for existing clusters: %v", err)
	}
	if err := p.Validate(ctx, attrs(pack("ingress", nil), nil, admission.Create), nil); err != nil {
		t.Fatalf("a pack targeted by a selector alone: %v", err)
	}
	got := causes(t, p.Validate(ctx, attrs(pack("ingress", []string{"local", "ghost", "edge", "phantom"}), nil, admission.Create), nil))
	want := []string{`FieldValueNotFound spec.targetClusters[1]: Not found: "ghost"`, `FieldValueNotFound spec.targetClusters[3]: Not found: "phantom"`}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("causes %q, want %q", got, want)
	}
	// An empty name is validation's to report (Required), not a Cluster to look up.
	if err := p.Validate(ctx, attrs(pack("ingress", []string{""}), nil, admission.Create), nil); err != nil {
		t.Errorf("an empty cluster name: %v", err)
	}
}

// An update is judged only on the clusters it adds: a pack whose Cluster has since gone can
// still change, but not gain another missing one.
func TestUpdatesCheckOnlyAddedClusters(t *testing.T) {
	p := newPlugin(t, nil, "local", "edge")
	old := pack("ingress", []string{"local", "gone"})
	changed := pack("ingress", []string{"gone", "local", "edge"})
	changed.Spec.Version = "v1.1.0"
	if err := p.Validate(ctx, attrs(changed, old, admission.Update), nil); err != nil {
		t.Fatalf("adding an existing cluster beside a removed one: %v", err)
	}
	got := causes(t, p.Validate(ctx, attrs(pack("ingress", []string{"local", "gone", "ghost"}), old, admission.Update), nil))
	if len(got) != 1 || got[0] != `FieldValueNotFound spec.targetClusters[2]: Not found: "ghost"` {
		t.Errorf("causes %q", got)
	}
	// An update without its old object is judged in full.
	got = causes(t, p.Validate(ctx, attrs(pack("ingress", []string{"local", "gone"}), nil, admission.Update), nil))
	if len(got) != 1 || got[0] != `FieldValueNotFound spec.targetClusters[1]: Not found: "gone"` {
		t.Errorf("causes without the old object %q", got)
	}
}

// A pack whose dependsOn closes a cycle among the packs of its namespace is refused at
// spec.dependsOn, naming the cycle from the pack back to itself.
func TestDependencyCycles(t *testing.T) {
	local := []string{"local"}
	for name, tc := range map[string]struct {
		packs []*infrastructurev1alpha1.InfrastructureClusterPack
		pack  *infrastructure.InfrastructureClusterPack
		want  string
	}{
		"two packs": {[]*infrastructurev1alpha1.InfrastructureClusterPack{stored(namespace, "crds", "cert-manager")},
			pack("cert-manager", local, "crds"), "cert-manager → crds → cert-manager"},
		"three packs": {[]*infrastructurev1alpha1.InfrastructureClusterPack{stored(namespace, "a", "b"), stored(namespace, "b", "c")},
			pack("c", local, "a"), "c → a → b → c"},
		"through the second dependency": {[]*infrastructurev1alpha1.InfrastructureClusterPack{stored(namespace, "b"), stored(namespace, "c", "d"), stored(namespace, "d", "a")},
			pack("a", local, "b", "c"), "a → c → d → a"},
	} {
		err := newPlugin(t, tc.packs, "local").Validate(ctx, attrs(tc.pack, nil, admission.Create), nil)
		got := causes(t, err)
		if len(got) != 1 || !strings.HasPrefix(got[0], "FieldValueInvalid spec.dependsOn: ") || !strings.Contains(got[0], "("+tc.want+")") {
			t.Errorf("%s: causes %q, want the cycle %s at spec.dependsOn", name, got, tc.want)
		}
	}
	// Unknown clusters and a cycle are both reported.
	p := newPlugin(t, []*infrastructurev1alpha1.InfrastructureClusterPack{stored(namespace, "crds", "cert-manager")}, "local")
	got := causes(t, p.Validate(ctx, attrs(pack("cert-manager", []string{"ghost"}, "crds"), nil, admission.Create), nil))
	if len(got) != 2 || !strings.Contains(got[0], "spec.targetClusters[0]") || !strings.Contains(got[1], "spec.dependsOn") {
		t.Errorf("an unknown cluster and a cycle: %q", got)
	}
}

// Shared dependencies, packs of other namespaces and dependencies that do not exist yet are no
// cycle; an update that leaves dependsOn as it was is not judged on it.
func TestNoCycle(t *testing.T) {
	local := []string{"local"}
	diamond := []*infrastructurev1alpha1.InfrastructureClusterPack{
		stored(namespace, "b", "d"), stored(namespace, "c", "d"), stored(namespace, "d"),
		// The same names in another namespace close a cycle there, not here.
		stored("other", "b", "a"), stored("other", "d", "a"),
	}
	p := newPlugin(t, diamond, "local")
	for name, pk := range map[string]*infrastructure.InfrastructureClusterPack{
		"a diamond":                    pack("a", local, "b", "c"),
		"a dependency on a diamond":    pack("e", local, "a", "d"),
		"a dependency not created yet": pack("f", local, "not-yet"),
	} {
		if err := p.Validate(ctx, attrs(pk, nil, admission.Create), nil); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	// d gaining a dependency on b would close b → d → b.
	got := causes(t, p.Validate(ctx, attrs(pack("d", local, "b"), pack("d", local), admission.Update), nil))
	if len(got) != 1 || !strings.Contains(got[0], "(d → b → d)") {
		t.Errorf("d → b on update: %q", got)
	}
	// A cycle that slipped past (two packs created at the same instant) does not block other
	// changes to its packs: plinth-controller reports it.
	slipped := newPlugin(t, []*infrastructurev1alpha1.InfrastructureClusterPack{stored(namespace, "x", "y"), stored(namespace, "y", "x")}, "local")
	next := pack("x", local, "y")
	next.Spec.Version = "v1.1.0"
	if err := slipped.Validate(ctx, attrs(next, pack("x", local, "y"), admission.Update), nil); err != nil {
		t.Errorf("an update keeping dependsOn: %v", err)
	}
	// Dropping the edge is always allowed.
	if err := slipped.Validate(ctx, attrs(pack("x", local), pack("x", local, "y"), admission.Update), nil); err != nil {
		t.Errorf("an update dropping dependsOn: %v", err)
	}
}

func TestOtherRequestsAreNotJudged(t *testing.T) {
	p := newPlugin(t, []*infrastructurev1alpha1.InfrastructureClusterPack{stored(namespace, "crds", "ingress")})
	ghost := pack("ingress", []string{"ghost"}, "crds")
	packs := infrastructure.Resource("infrastructureclusterpacks")
	kind := infrastructure.Kind("InfrastructureClusterPack")
	if err := p.Validate(ctx, attrsOf(ghost, pack("ingress", nil), kind, packs, "status", admission.Update), nil); err != nil {
		t.Errorf("a status update: %v", err)
	}
	instance := &infrastructure.InfrastructurePackInstance{ObjectMeta: metav1.ObjectMeta{Name: "ingress-ghost", Namespace: "seam-tenant-ghost"},
		Spec: infrastructure.InfrastructurePackInstanceSpec{ClusterPackRef: "ingress", TargetClusterRef: "ghost", DependsOn: []string{"crds-ghost"}}}
	if err := p.Validate(ctx, attrsOf(instance, nil, infrastructure.Kind("InfrastructurePackInstance"), infrastructure.Resource("infrastructurepackinstances"), "", admission.Create), nil); err != nil {
		t.Errorf("an InfrastructurePackInstance: %v", err)
	}
	artifact := &gitops.OCIArtifact{ObjectMeta: metav1.ObjectMeta{Name: "ingress", Namespace: namespace},
		Spec: gitops.OCIArtifactSpec{Targets: []gitops.ArtifactTarget{{Cluster: "ghost"}}}}
	if err := p.Validate(ctx, attrsOf(artifact, nil, gitops.Kind("OCIArtifact"), gitops.Resource("ociartifacts"), "", admission.Create), nil); err != nil {
		t.Errorf("an OCIArtifact: %v", err)
	}
	// A pack under another group's resource name is not a pack.
	if err := p.Validate(ctx, attrsOf(ghost, nil, kind, schema.GroupResource{Group: "example.com", Resource: "infrastructureclusterpacks"}, "", admission.Create), nil); err != nil {
		t.Errorf("another group's resource: %v", err)
	}
	if !p.Handles(admission.Create) || !p.Handles(admission.Update) || p.Handles(admission.Delete) || p.Handles(admission.Connect) {
		t.Error("the plugin handles creates and updates only")
	}
}

// The plugin reads Clusters and packs from the informers once both have synced, and refuses
// until then.
func TestReadsTheInformers(t *testing.T) {
	t.Run("synced", func(t *testing.T) {
		t.Parallel()
		client := fake.NewSimpleClientset(&platformv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "local"}}, stored(namespace, "crds", "ingress"))
		f := informers.NewSharedInformerFactory(client, 0)
		p := New()
		p.SetPlinthInformerFactory(f)
		stop := make(chan struct{})
		defer close(stop)
		f.Start(stop)
		f.WaitForCacheSync(stop)
		if err := p.Validate(ctx, attrs(pack("ingress", []string{"local"}), nil, admission.Create), nil); err != nil {
			t.Errorf("refused: %v", err)
		}
		got := causes(t, p.Validate(ctx, attrs(pack("ingress", []string{"edge"}, "crds"), nil, admission.Create), nil))
		if len(got) != 2 || !strings.Contains(got[1], "(ingress → crds → ingress)") {
			t.Errorf("causes %q", got)
		}
	})
	t.Run("never synced", func(t *testing.T) {
		t.Parallel()
		p := New()
		p.SetPlinthInformerFactory(informers.NewSharedInformerFactory(fake.NewSimpleClientset(), 0))
		// Not started: admission waits its 10 s for readiness, then refuses.
		err := p.Validate(ctx, attrs(pack("ingress", []string{"local"}), nil, admission.Create), nil)
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "not yet ready") {
			t.Errorf("before the caches sync: %v, want 403 not yet ready", err)
		}
	})
}

func TestValidateInitialization(t *testing.T) {
	if err := New().ValidateInitialization(); err == nil {
		t.Error("a plugin without informers passed initialization")
	}
}

// Instances are named {pack}-{cluster} in the seam-tenant-{cluster} namespaces all packs share:
// a pack of a name another namespace uses is refused at metadata.name; updates and other names
// pass.
func TestPackNamesAreUniqueAcrossNamespaces(t *testing.T) {
	local := []string{"local"}
	p := newPlugin(t, []*infrastructurev1alpha1.InfrastructureClusterPack{stored("other", "ingress")}, "local")
	got := causes(t, p.Validate(ctx, attrs(pack("ingress", local), nil, admission.Create), nil))
	if len(got) != 1 || !strings.HasPrefix(got[0], "FieldValueDuplicate metadata.name") || !strings.Contains(got[0], "other/ingress") {
		t.Errorf("causes %q", got)
	}
	if err := p.Validate(ctx, attrs(pack("monitoring", local), nil, admission.Create), nil); err != nil {
		t.Errorf("another name: %v", err)
	}
	if err := p.Validate(ctx, attrs(pack("ingress", local), pack("ingress", local), admission.Update), nil); err != nil {
		t.Errorf("an update: %v", err)
	}
}
