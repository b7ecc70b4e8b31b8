package gitopstargets

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/plinth-dev/plinth/pkg/apis/gitops"
	gitopsv1alpha1 "github.com/plinth-dev/plinth/pkg/apis/gitops/v1alpha1"
	platformv1alpha1 "github.com/plinth-dev/plinth/pkg/apis/platform/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/generated/clientset/versioned/fake"
	informers "github.com/plinth-dev/plinth/pkg/generated/informers/externalversions"
)

// newPlugin serves the named Clusters from an informer's indexer, as the server's informer
// would.
func newPlugin(t *testing.T, clusters ...string) *Plugin {
	return newPluginWith(t, nil, clusters...)
}

// newPluginWith serves the named Clusters and the given OCIArtifacts from informers' indexers.
func newPluginWith(t *testing.T, artifacts []*gitopsv1alpha1.OCIArtifact, clusters ...string) *Plugin {
	t.Helper()
	f := informers.NewSharedInformerFactory(fake.NewSimpleClientset(), 0)
	p := New()
	p.SetPlinthInformerFactory(f)
	if err := p.ValidateInitialization(); err != nil {
		t.Fatal(err)
	}
	indexer := f.Platform().V1alpha1().Clusters().Informer().GetIndexer()
	for _, name := range clusters {
		if err := indexer.Add(&platformv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, a := range artifacts {
		if err := f.Gitops().V1alpha1().OCIArtifacts().Informer().GetIndexer().Add(a); err != nil {
			t.Fatal(err)
		}
	}
	// The indexers are filled by hand: nothing lists, so the informers never count as synced.
	p.SetReadyFunc(func() bool { return true })
	return p
}

func artifact(clusters ...string) *gitops.OCIArtifact {
	a := &gitops.OCIArtifact{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "plinth-system"}}
	for _, c := range clusters {
		a.Spec.Targets = append(a.Spec.Targets, gitops.ArtifactTarget{Cluster: c})
	}
	return a
}

func request(clusters ...string) *gitops.ReconciliationRequest {
	r := &gitops.ReconciliationRequest{ObjectMeta: metav1.ObjectMeta{Name: "now", Namespace: "plinth-system"}}
	for _, c := range clusters {
		r.Spec.Targets = append(r.Spec.Targets, gitops.ReconciliationTarget{Cluster: c, Kind: gitops.TargetKindOCIArtifact, Name: "app"})
	}
	return r
}

func attrs(obj, old runtime.Object, resource, subresource string, op admission.Operation) admission.Attributes {
	kind := "OCIArtifact"
	if resource == "reconciliationrequests" {
		kind = "ReconciliationRequest"
	}
	return admission.NewAttributesRecord(obj, old, gitops.Kind(kind).WithVersion(""), "plinth-system", obj.(metav1.Object).GetName(),
		gitops.Resource(resource).WithVersion(""), subresource, op, nil, false, &user.DefaultInfo{Name: "dana", Groups: []string{"platform:admins"}})
}

// causes are the refusal's causes as "field: message"; it fails the test unless err is a 422.
func causes(t *testing.T, err error) []string {
	t.Helper()
	if !apierrors.IsInvalid(err) {
		t.Fatalf("error %v, want 422 Invalid", err)
	}
	var out []string
	for _, c := range err.(apierrors.APIStatus).Status().Details.Causes {
		if c.Type != metav1.CauseTypeFieldValueNotFound {
			t.Errorf("cause %+v, want NotFound", c)
		}
		out = append(out, c.Field+": "+c.Message)
	}
	return out
}

func TestCreatesNeedExistingClusters(t *testing.T) {
	p := newPlugin(t, "local", "edge")
	ctx := context.Background()
	if err := p.Validate(ctx, attrs(artifact("local", "edge"), nil, "ociartifacts", "", admission.Create), nil); err != nil {
		t.Fatalf("an artifact for existing clusters: %v", err)
	}
	if err := p.Validate(ctx, attrs(artifact(), nil, "ociartifacts", "", admission.Create), nil); err != nil {
		t.Fatalf("an artifact without targets: %v", err)
	}
	got := causes(t, p.Validate(ctx, attrs(artifact("local", "ghost", "edge", "phantom"), nil, "ociartifacts", "", admission.Create), nil))
	if want := `[spec.targets[1].cluster: Not found: "ghost" spec.targets[3].cluster: Not found: "phantom"]`; strings.Join(got, " ") != strings.Trim(want, "[]") {
		t.Errorf("causes %q, want %s", got, want)
	}
	if err := p.Validate(ctx, attrs(request("local", "edge"), nil, "reconciliationrequests", "", admission.Create), nil); err != nil {
		t.Fatalf("a request for existing clusters: %v", err)
	}
	got = causes(t, p.Validate(ctx, attrs(request("edge", "ghost"), nil, "reconciliationrequests", "", admission.Create), nil))
	if len(got) != 1 || got[0] != `spec.targets[1].cluster: Not found: "ghost"` {
		t.Errorf("request causes %q", got)
	}
	err := p.Validate(ctx, attrs(request("ghost"), nil, "reconciliationrequests", "", admission.Create), nil)
	if s := err.(apierrors.APIStatus).Status(); s.Details.Kind != "ReconciliationRequest" || s.Details.Group != gitops.GroupName || s.Details.Name != "now" {
		t.Errorf("details %+v", s.Details)
	}
	// An empty name is validation's to report (Required), not a Cluster to look up.
	if err := p.Validate(ctx, attrs(artifact(""), nil, "ociartifacts", "", admission.Create), nil); err != nil {
		t.Errorf("an empty cluster name: %v", err)
	}
}

// An update is judged only on the targets it adds: an artifact whose Cluster has since gone
// can still change, but not gain another missing one.
func TestUpdatesCheckOnlyAddedTargets(t *testing.T) {
	p := newPlugin(t, "local", "edge")
	ctx := context.Background()
	old := artifact("local", "gone")
	if err := p.Validate(ctx, attrs(artifact("gone", "local", "edge"), old, "ociartifacts", "", admission.Update), nil); err != nil {
		t.Fatalf("adding an existing cluster beside a removed one: %v", err)
	}
	got := causes(t, p.Validate(ctx, attrs(artifact("local", "gone", "ghost"), old, "ociartifacts", "", admission.Update), nil))
	if len(got) != 1 || got[0] != `spec.targets[2].cluster: Not found: "ghost"` {
		t.Errorf("causes %q", got)
	}
	// An update without its old object is judged in full.
	got = causes(t, p.Validate(ctx, attrs(artifact("local", "gone"), nil, "ociartifacts", "", admission.Update), nil))
	if len(got) != 1 || got[0] != `spec.targets[1].cluster: Not found: "gone"` {
		t.Errorf("causes without the old object %q", got)
	}
	oldRequest := request("gone")
	if err := p.Validate(ctx, attrs(request("gone"), oldRequest, "reconciliationrequests", "", admission.Update), nil); err != nil {
		t.Fatalf("a request update keeping its targets: %v", err)
	}
}

func TestOtherRequestsAreNotJudged(t *testing.T) {
	p := newPlugin(t)
	ctx := context.Background()
	if err := p.Validate(ctx, attrs(artifact("ghost"), artifact(), "ociartifacts", "status", admission.Update), nil); err != nil {
		t.Errorf("a status update: %v", err)
	}
	registry := &gitops.OCIRegistry{ObjectMeta: metav1.ObjectMeta{Name: "local-registry"}}
	if err := p.Validate(ctx, attrs(registry, nil, "ociregistries", "", admission.Create), nil); err != nil {
		t.Errorf("an OCIRegistry: %v", err)
	}
	if !p.Handles(admission.Create) || !p.Handles(admission.Update) || p.Handles(admission.Delete) || p.Handles(admission.Connect) {
		t.Error("the plugin handles creates and updates only")
	}
}

// The plugin reads Clusters from the informer once it has synced, and refuses until then.
func TestReadsTheInformer(t *testing.T) {
	t.Run("synced", func(t *testing.T) {
		t.Parallel()
		client := fake.NewSimpleClientset(&platformv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "local"}})
		f := informers.NewSharedInformerFactory(client, 0)
		p := New()
		p.SetPlinthInformerFactory(f)
		stop := make(chan struct{})
		defer close(stop)
		f.Start(stop)
		f.WaitForCacheSync(stop)
		if err := p.Validate(context.Background(), attrs(artifact("local"), nil, "ociartifacts", "", admission.Create), nil); err != nil {
			t.Errorf("refused: %v", err)
		}
		causes(t, p.Validate(context.Background(), attrs(artifact("edge"), nil, "ociartifacts", "", admission.Create), nil))
	})
	t.Run("never synced", func(t *testing.T) {
		t.Parallel()
		p := New()
		p.SetPlinthInformerFactory(informers.NewSharedInformerFactory(fake.NewSimpleClientset(), 0))
		// Not started: admission waits its 10 s for readiness, then refuses.
		err := p.Validate(context.Background(), attrs(artifact("local"), nil, "ociartifacts", "", admission.Create), nil)
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "not yet ready") {
			t.Errorf("before the Cluster cache syncs: %v, want 403 not yet ready", err)
		}
	})
}

// storedArtifact is an OCIArtifact as the informer holds it: defaulted, repository set.
func storedArtifact(namespace, name, registry, repository string) *gitopsv1alpha1.OCIArtifact {
	return &gitopsv1alpha1.OCIArtifact{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: gitopsv1alpha1.OCIArtifactSpec{RegistryRef: gitopsv1alpha1.LocalObjectReference{Name: registry},
			Name: "workloads/" + name, Repository: repository},
	}
}

// A second OCIArtifact for a registry's repository in the namespace is refused at
// spec.repository, naming the first; other registries, repositories and namespaces are free.
func TestOneArtifactPerRepository(t *testing.T) {
	p := newPluginWith(t, []*gitopsv1alpha1.OCIArtifact{
		storedArtifact("plinth-system", "web", "local", "team-a/web"),
		storedArtifact("other", "api", "local", "team-a/api"),
	}, "local")
	create := func(registry, repository, name string) error {
		a := artifact("local")
		a.Spec.RegistryRef.Name, a.Spec.Repository, a.Spec.Name = registry, repository, name
		return p.Validate(context.Background(), attrs(a, nil, "ociartifacts", "", admission.Create), nil)
	}
	err := create("local", "team-a/web", "workloads/app")
	if !apierrors.IsInvalid(err) {
		t.Fatalf("a second artifact for team-a/web: %v, want 422", err)
	}
	c := err.(apierrors.APIStatus).Status().Details.Causes
	if len(c) != 1 || c[0].Type != metav1.CauseTypeFieldValueDuplicate || c[0].Field != "spec.repository" ||
		c[0].Message != `Duplicate value: "team-a/web": OCIArtifact web already pushes to repository team-a/web of OCIRegistry local; one artifact per repository` {
		t.Errorf("causes %+v", c)
	}
	// Not defaulted yet: the repository defaulting would give (spec.name).
	if err := create("local", "", "team-a/web"); !apierrors.IsInvalid(err) {
		t.Errorf("an undefaulted repository: %v, want 422", err)
	}
	for name, c := range map[string][3]string{
		"another repository":        {"local", "team-a/app", "workloads/app"},
		"another registry":          {"edge", "team-a/web", "workloads/web"},
		"a repository of elsewhere": {"local", "team-a/api", "workloads/api"},
		"no registry yet":           {"", "team-a/web", "workloads/web"},
	} {
		if err := create(c[0], c[1], c[2]); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	// Updates cannot change the repository (immutable): not judged again.
	old := artifact("local")
	old.Spec.RegistryRef.Name, old.Spec.Repository = "local", "team-a/web"
	if err := p.Validate(context.Background(), attrs(old.DeepCopy(), old, "ociartifacts", "", admission.Update), nil); err != nil {
		t.Errorf("an update: %v", err)
	}
}

func TestValidateInitialization(t *testing.T) {
	if err := New().ValidateInitialization(); err == nil {
		t.Error("a plugin without informers passed initialization")
	}
}
