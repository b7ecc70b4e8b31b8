package provisioners

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
	"k8s.io/utils/ptr"

	"github.com/plinth-dev/plinth/pkg/apis/score"
	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
	"github.com/plinth-dev/plinth/pkg/generated/clientset/versioned/fake"
	informers "github.com/plinth-dev/plinth/pkg/generated/informers/externalversions"
)

// stored is a provisioner as the informer holds it.
func stored(name, typ string, class, id *string) *v1b1.Provisioner {
	return &v1b1.Provisioner{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       v1b1.ProvisionerSpec{URI: "template://" + name, Type: typ, Class: class, ID: id},
	}
}

// prov is a provisioner being admitted.
func prov(name, typ string, class, id *string) *score.Provisioner {
	return &score.Provisioner{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       score.ProvisionerSpec{URI: "template://" + name, Type: typ, Class: class, ID: id},
	}
}

// newPlugin serves the given provisioners from the informer's indexer, as the server's
// informer would.
func newPlugin(t *testing.T, provisioners ...*v1b1.Provisioner) *Plugin {
	t.Helper()
	f := informers.NewSharedInformerFactory(fake.NewSimpleClientset(), 0)
	p := New()
	p.SetPlinthInformerFactory(f)
	if err := p.ValidateInitialization(); err != nil {
		t.Fatal(err)
	}
	for _, o := range provisioners {
		if err := f.Score().V1b1().Provisioners().Informer().GetIndexer().Add(o); err != nil {
			t.Fatal(err)
		}
	}
	// The indexer is filled by hand: nothing lists, so the informer never counts as synced.
	p.SetReadyFunc(func() bool { return true })
	return p
}

// attrsOf is a request of dana, a platform administrator, on resource/subresource.
func attrsOf(obj, old runtime.Object, kind schema.GroupKind, resource schema.GroupResource, subresource string, op admission.Operation) admission.Attributes {
	return admission.NewAttributesRecord(obj, old, kind.WithVersion(""), "", obj.(metav1.Object).GetName(),
		resource.WithVersion(""), subresource, op, nil, false, &user.DefaultInfo{Name: "dana", Groups: []string{"platform:admins"}})
}

// attrs is a request on provisioners.
func attrs(obj, old *score.Provisioner, op admission.Operation) admission.Attributes {
	var oldObj runtime.Object
	if old != nil {
		oldObj = old
	}
	return attrsOf(obj, oldObj, score.Kind("Provisioner"), score.Resource("provisioners"), "", op)
}

// cause is the refusal's one cause as "type field: message"; it fails the test unless err is
// a 422 about a Provisioner with one cause.
func cause(t *testing.T, err error) string {
	t.Helper()
	if !apierrors.IsInvalid(err) {
		t.Fatalf("error %v, want 422 Invalid", err)
	}
	s := err.(apierrors.APIStatus).Status()
	if s.Details.Kind != "Provisioner" || s.Details.Group != score.GroupName || len(s.Details.Causes) != 1 {
		t.Fatalf("details %+v", s.Details)
	}
	c := s.Details.Causes[0]
	return string(c.Type) + " " + c.Field + ": " + c.Message
}

var ctx = context.Background()

// A second provisioner of the same type, class and id is refused at spec.type, naming the
// first; unset class and id count as their own value (any).
func TestSameTypeClassAndIDAreRefused(t *testing.T) {
	p := newPlugin(t,
		stored("postgres", "postgres", nil, nil),
		stored("postgres-large", "postgres", ptr.To("large"), nil),
		stored("postgres-shared", "postgres", ptr.To("large"), ptr.To("main-db")),
		stored("redis-cache", "redis", nil, ptr.To("cache")),
	)
	for name, tc := range map[string]struct {
		prov *score.Provisioner
		want string
	}{
		"type, any class, any id": {prov("postgres-2", "postgres", nil, nil),
			`FieldValueDuplicate spec.type: Duplicate value: "postgres": Provisioner postgres already provides this type for any class and any id`},
		"type and class": {prov("postgres-large-2", "postgres", ptr.To("large"), nil),
			`FieldValueDuplicate spec.type: Duplicate value: "postgres": Provisioner postgres-large already provides this type for class "large" and any id`},
		"type, class and id": {prov("postgres-shared-2", "postgres", ptr.To("large"), ptr.To("main-db")),
			`FieldValueDuplicate spec.type: Duplicate value: "postgres": Provisioner postgres-shared already provides this type for class "large" and id "main-db"`},
		"type and id": {prov("redis-cache-2", "redis", nil, ptr.To("cache")),
			`FieldValueDuplicate spec.type: Duplicate value: "redis": Provisioner redis-cache already provides this type for any class and id "cache"`},
	} {
		got := cause(t, p.Validate(ctx, attrs(tc.prov, nil, admission.Create), nil))
		if !strings.HasPrefix(got, tc.want) || !strings.HasSuffix(got, "would be ambiguous") {
			t.Errorf("%s: cause %q, want %q…", name, got, tc.want)
		}
	}
}

// A different type, class or id, or a class or id set where the other's is unset, is a more
// or less specific provisioner, not an ambiguous one.
func TestOtherMatchesPass(t *testing.T) {
	p := newPlugin(t,
		stored("postgres", "postgres", nil, nil),
		stored("postgres-large", "postgres", ptr.To("large"), nil),
		stored("postgres-shared", "postgres", ptr.To("large"), ptr.To("main-db")),
	)
	for name, pr := range map[string]*score.Provisioner{
		"another type":          prov("redis", "redis", nil, nil),
		"another class":         prov("postgres-small", "postgres", ptr.To("small"), nil),
		"an id, any class":      prov("postgres-main", "postgres", nil, ptr.To("main-db")),
		"another id":            prov("postgres-other", "postgres", ptr.To("large"), ptr.To("other-db")),
		"an empty class is set": prov("postgres-empty", "postgres", ptr.To(""), nil),
		// An empty type is validation's to report.
		"no type": prov("untyped", "", nil, nil),
	} {
		if err := p.Validate(ctx, attrs(pr, nil, admission.Create), nil); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// An update is judged only when it changes type, class or id, and never against the object
// itself.
func TestUpdates(t *testing.T) {
	p := newPlugin(t,
		stored("postgres", "postgres", nil, nil),
		stored("postgres-large", "postgres", ptr.To("large"), nil),
		// Two that slipped past together (created at the same instant).
		stored("redis", "redis", nil, nil),
		stored("redis-2", "redis", nil, nil),
	)
	described := prov("postgres", "postgres", nil, nil)
	described.Spec.Description = "Provisions a database."
	if err := p.Validate(ctx, attrs(described, prov("postgres", "postgres", nil, nil), admission.Update), nil); err != nil {
		t.Errorf("a description change: %v", err)
	}
	// Without its old object an update is judged in full, but not against itself.
	if err := p.Validate(ctx, attrs(described, nil, admission.Update), nil); err != nil {
		t.Errorf("an update without the old object: %v", err)
	}
	if err := p.Validate(ctx, attrs(prov("redis-2", "redis", nil, nil), prov("redis-2", "redis", nil, nil), admission.Update), nil); err != nil {
		t.Errorf("an update of one of a pair that slipped past: %v", err)
	}
	got := cause(t, p.Validate(ctx, attrs(prov("postgres", "postgres", ptr.To("large"), nil), prov("postgres", "postgres", nil, nil), admission.Update), nil))
	if !strings.Contains(got, "spec.type") || !strings.Contains(got, "Provisioner postgres-large") {
		t.Errorf("a class change onto another provisioner's: %q", got)
	}
}

func TestOtherRequestsAreNotJudged(t *testing.T) {
	p := newPlugin(t, stored("postgres", "postgres", nil, nil))
	dup := prov("postgres-2", "postgres", nil, nil)
	if err := p.Validate(ctx, attrsOf(dup, nil, score.Kind("Provisioner"), score.Resource("provisioners"), "status", admission.Create), nil); err != nil {
		t.Errorf("a subresource: %v", err)
	}
	if err := p.Validate(ctx, attrsOf(dup, nil, score.Kind("Provisioner"), schema.GroupResource{Group: "example.com", Resource: "provisioners"}, "", admission.Create), nil); err != nil {
		t.Errorf("another group's resource: %v", err)
	}
	policy := &score.PlatformPolicy{ObjectMeta: metav1.ObjectMeta{Name: "postgres"}}
	if err := p.Validate(ctx, attrsOf(policy, nil, score.Kind("PlatformPolicy"), score.Resource("platformpolicies"), "", admission.Create), nil); err != nil {
		t.Errorf("a PlatformPolicy: %v", err)
	}
	if !p.Handles(admission.Create) || !p.Handles(admission.Update) || p.Handles(admission.Delete) || p.Handles(admission.Connect) {
		t.Error("the plugin handles creates and updates only")
	}
}

// The plugin reads Provisioners from the informer once it has synced, and refuses until then.
func TestReadsTheInformer(t *testing.T) {
	t.Run("synced", func(t *testing.T) {
		t.Parallel()
		f := informers.NewSharedInformerFactory(fake.NewSimpleClientset(stored("postgres", "postgres", nil, nil)), 0)
		p := New()
		p.SetPlinthInformerFactory(f)
		stop := make(chan struct{})
		defer close(stop)
		f.Start(stop)
		f.WaitForCacheSync(stop)
		if err := p.Validate(ctx, attrs(prov("redis", "redis", nil, nil), nil, admission.Create), nil); err != nil {
			t.Errorf("refused: %v", err)
		}
		if got := cause(t, p.Validate(ctx, attrs(prov("postgres-2", "postgres", nil, nil), nil, admission.Create), nil)); !strings.Contains(got, "Provisioner postgres ") {
			t.Errorf("cause %q", got)
		}
	})
	t.Run("never synced", func(t *testing.T) {
		t.Parallel()
		p := New()
		p.SetPlinthInformerFactory(informers.NewSharedInformerFactory(fake.NewSimpleClientset(), 0))
		// Not started: admission waits its 10 s for readiness, then refuses.
		err := p.Validate(ctx, attrs(prov("redis", "redis", nil, nil), nil, admission.Create), nil)
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "not yet ready") {
			t.Errorf("before the cache syncs: %v, want 403 not yet ready", err)
		}
	})
}

func TestValidateInitialization(t *testing.T) {
	if err := New().ValidateInitialization(); err == nil {
		t.Error("a plugin without the informer passed initialization")
	}
}
