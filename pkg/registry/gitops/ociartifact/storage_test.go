package ociartifact

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/plinth-dev/plinth/pkg/registry/store/storetest"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/plinth-dev/plinth/pkg/apis/common"
	"github.com/plinth-dev/plinth/pkg/apis/gitops"
	"github.com/plinth-dev/plinth/pkg/registry/gitops/gitopstest"
	"github.com/plinth-dev/plinth/pkg/registry/store"
)

const (
	configMapV1 = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"app-config"},"data":{"color":"blue","size":1}}`
	// The same object, formatted and ordered differently.
	configMapV1Reformatted = `{ "kind": "ConfigMap", "apiVersion": "v1", "data": {"size": 1, "color": "blue"}, "metadata": {"name": "app-config"} }`
	configMapV2            = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"app-config"},"data":{"color":"green","size":1}}`
)

func artifact(name, version string) *gitops.OCIArtifact {
	return &gitops.OCIArtifact{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: gitops.OCIArtifactSpec{
			RegistryRef: gitops.LocalObjectReference{Name: "local-registry"},
			Name:        "workloads/" + name, Repository: "plinth/workloads/" + name,
			Version: version, Tag: version,
			Manifests: []common.RawObject{{Raw: []byte(configMapV1)}},
			Targets:   []gitops.ArtifactTarget{{Cluster: "local", Namespace: "flux-system", Path: "./"}},
		},
	}
}

type env struct {
	t      *testing.T
	main   *store.REST
	status *store.StatusREST
	ctx    context.Context
}

func newEnv(t *testing.T) *env {
	main, status, err := NewREST(gitopstest.Scheme, gitopstest.RunEtcd(t).OptionsGetter())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(main.Destroy)
	return &env{t: t, main: main, status: status, ctx: gitopstest.As("plinth-system", "dana", "platform:admins")}
}

func (e *env) create(a *gitops.OCIArtifact) *gitops.OCIArtifact {
	e.t.Helper()
	out, err := e.main.Create(e.ctx, a, rest.ValidateAllObjectFunc, &metav1.CreateOptions{})
	if err != nil {
		e.t.Fatalf("creating %s: %v", a.Name, err)
	}
	return out.(*gitops.OCIArtifact)
}

// updateWith updates name through r as an update request does.
var updateWith = storetest.Update[*gitops.OCIArtifact]

func (e *env) update(name string, mutate func(*gitops.OCIArtifact)) (*gitops.OCIArtifact, error) {
	return updateWith(e.ctx, e.main, name, mutate)
}

// push records, as plinth-controller does after a push, that the spec's version is in the
// registry.
func (e *env) push(name string) {
	e.t.Helper()
	if _, err := updateWith(e.ctx, e.status, name, func(a *gitops.OCIArtifact) {
		a.Status.RegistryEndpoint = "localhost:5000"
		a.Status.PushedVersion = a.Spec.Version
		a.Status.URL = "oci://localhost:5000/" + a.Spec.Repository + ":" + a.Spec.Tag
		a.Status.Digest = "sha256:" + strings.Repeat("ab", 32)
	}); err != nil {
		e.t.Fatalf("recording the push of %s: %v", name, err)
	}
}

// expectConflict fails unless err is the 409 of a pushed version.
func expectConflict(t *testing.T, what string, err error, version, name string) {
	t.Helper()
	if !apierrors.IsConflict(err) {
		t.Fatalf("%s: %v, want 409 Conflict", what, err)
	}
	s := err.(apierrors.APIStatus).Status()
	want := fmt.Sprintf("version %s of %s is pushed and cannot change; set a new spec.version", version, name)
	if s.Code != http.StatusConflict || !strings.HasSuffix(s.Message, want) || s.Details == nil ||
		s.Details.Group != gitops.GroupName || s.Details.Kind != "ociartifacts" {
		t.Fatalf("%s: status %+v, want a conflict on ociartifacts saying %q", what, s, want)
	}
}

// A pushed version is immutable: once status.pushedVersion is the spec's version, changing its
// manifests or its ConfigMap is a 409 Conflict; everything else may change, and a new version
// may carry new content.
func TestAPushedVersionIsImmutable(t *testing.T) {
	e := newEnv(t)
	e.create(artifact("app", "1.0.0"))

	// Before the push, the content of 1.0.0 may still change.
	if _, err := e.update("app", func(a *gitops.OCIArtifact) { a.Spec.Manifests[0].Raw = []byte(configMapV2) }); err != nil {
		t.Fatalf("changing an unpushed version: %v", err)
	}
	if _, err := e.update("app", func(a *gitops.OCIArtifact) { a.Spec.Manifests[0].Raw = []byte(configMapV1) }); err != nil {
		t.Fatal(err)
	}
	e.push("app")

	_, err := e.update("app", func(a *gitops.OCIArtifact) { a.Spec.Manifests[0].Raw = []byte(configMapV2) })
	expectConflict(t, "changing a manifest", err, "1.0.0", "workloads/app")
	_, err = e.update("app", func(a *gitops.OCIArtifact) {
		a.Spec.Manifests = append(a.Spec.Manifests, common.RawObject{Raw: []byte(`{"apiVersion":"v1","kind":"Service","metadata":{"name":"app"}}`)})
	})
	expectConflict(t, "adding a manifest", err, "1.0.0", "workloads/app")
	_, err = e.update("app", func(a *gitops.OCIArtifact) {
		a.Spec.Manifests, a.Spec.ConfigMapRef = nil, &gitops.LocalObjectReference{Name: "app-manifests"}
	})
	expectConflict(t, "switching to a ConfigMap", err, "1.0.0", "workloads/app")

	// The same content written differently, targets and labels are not the content.
	a, err := e.update("app", func(a *gitops.OCIArtifact) {
		a.Spec.Manifests[0].Raw = []byte(configMapV1Reformatted)
		a.Spec.Targets = append(a.Spec.Targets, gitops.ArtifactTarget{Cluster: "edge", Path: "./"})
		a.Labels = map[string]string{"team": "a"}
	})
	if err != nil {
		t.Fatalf("an update that keeps the content: %v", err)
	}
	if a.Status.PushedVersion != "1.0.0" {
		t.Errorf("the status was lost: %+v", a.Status)
	}

	// A new version carries the new content; until it is pushed, it may change again.
	if _, err := e.update("app", func(a *gitops.OCIArtifact) {
		a.Spec.Version, a.Spec.Tag = "1.1.0", "1.1.0"
		a.Spec.Manifests[0].Raw = []byte(configMapV2)
	}); err != nil {
		t.Fatalf("a new version with new content: %v", err)
	}
	if _, err := e.update("app", func(a *gitops.OCIArtifact) { a.Spec.Manifests[0].Raw = []byte(configMapV1) }); err != nil {
		t.Fatalf("changing the unpushed 1.1.0: %v", err)
	}
	e.push("app")
	_, err = e.update("app", func(a *gitops.OCIArtifact) { a.Spec.Manifests[0].Raw = []byte(configMapV2) })
	expectConflict(t, "changing the pushed 1.1.0", err, "1.1.0", "workloads/app")
}

// latest is the one version that moves: its content may change after a push.
func TestLatestMoves(t *testing.T) {
	e := newEnv(t)
	e.create(artifact("edge", "latest"))
	e.push("edge")
	if _, err := e.update("edge", func(a *gitops.OCIArtifact) { a.Spec.Manifests[0].Raw = []byte(configMapV2) }); err != nil {
		t.Fatalf("changing latest after a push: %v", err)
	}
}

// A ConfigMap-sourced version is pinned to its ConfigMap once pushed.
func TestAPushedConfigMapVersionKeepsItsConfigMap(t *testing.T) {
	e := newEnv(t)
	a := artifact("cm", "2.0.0")
	a.Spec.Manifests, a.Spec.ConfigMapRef = nil, &gitops.LocalObjectReference{Name: "cm-v2"}
	e.create(a)
	e.push("cm")
	_, err := e.update("cm", func(a *gitops.OCIArtifact) { a.Spec.ConfigMapRef.Name = "cm-v3" })
	expectConflict(t, "another ConfigMap", err, "2.0.0", "workloads/cm")
	if _, err := e.update("cm", func(a *gitops.OCIArtifact) {
		a.Spec.Version, a.Spec.Tag, a.Spec.ConfigMapRef.Name = "3.0.0", "3.0.0", "cm-v3"
	}); err != nil {
		t.Fatal(err)
	}
}

func TestValidationAndFieldSelectors(t *testing.T) {
	e := newEnv(t)
	bad := artifact("bad", "one")
	_, err := e.main.Create(e.ctx, bad, rest.ValidateAllObjectFunc, &metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.version") {
		t.Fatalf("version one: %v", err)
	}
	// A tag change without a version change is a 422, not the 409 of the content.
	e.create(artifact("app", "1.0.0"))
	e.push("app")
	if _, err := e.update("app", func(a *gitops.OCIArtifact) { a.Spec.Tag = "stable" }); !apierrors.IsInvalid(err) {
		t.Fatalf("retagging 1.0.0: %v", err)
	}
	other := artifact("web", "2.0.0")
	other.Spec.RegistryRef.Name = "other-registry"
	e.create(other)
	for selector, want := range map[string]string{
		"spec.registryRef.name=other-registry":    "web",
		"spec.repository=plinth/workloads/app":    "app",
		"spec.version=2.0.0":                      "web",
		"spec.version=1.0.0,metadata.name=app":    "app",
		"spec.registryRef.name=local-registry":    "app",
		"spec.repository!=plinth/workloads/app":   "web",
		"spec.version!=2.0.0,spec.version!=3.0.0": "app",
	} {
		list, err := e.main.List(e.ctx, &metainternalversion.ListOptions{FieldSelector: fields.ParseSelectorOrDie(selector)})
		if err != nil {
			t.Fatal(err)
		}
		if items := list.(*gitops.OCIArtifactList).Items; len(items) != 1 || items[0].Name != want {
			t.Errorf("%s: %d items, want %s", selector, len(items), want)
		}
	}
}

func TestTable(t *testing.T) {
	a := artifact("app", "1.0.0")
	a.Spec.Targets = append(a.Spec.Targets, gitops.ArtifactTarget{Cluster: "edge"})
	for name, tt := range map[string]struct {
		status gitops.OCIArtifactStatus
		want   string
	}{
		"new": {gitops.OCIArtifactStatus{}, "[plinth/workloads/app 1.0.0 <none> 0/2 Unknown]"},
		"pushed, one target ready": {gitops.OCIArtifactStatus{
			Digest:     "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
			Targets:    []gitops.ArtifactTargetStatus{{Cluster: "local", Ready: true}, {Cluster: "edge"}},
			Conditions: []metav1.Condition{{Type: gitops.ConditionReady, Status: metav1.ConditionFalse}},
		}, "[plinth/workloads/app 1.0.0 sha256:0123456789ab 1/2 False]"},
		"a dropped target does not count": {gitops.OCIArtifactStatus{
			Digest:     "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
			Targets:    []gitops.ArtifactTargetStatus{{Cluster: "local", Ready: true}, {Cluster: "edge", Ready: true}, {Cluster: "old", Ready: true}},
			Conditions: []metav1.Condition{{Type: gitops.ConditionReady, Status: metav1.ConditionTrue}},
		}, "[plinth/workloads/app 1.0.0 sha256:0123456789ab 2/2 True]"},
	} {
		obj := a.DeepCopy()
		obj.Status = tt.status
		tbl, err := Table.ConvertToTable(context.Background(), obj, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(tbl.Rows[0].Cells[1:6]); got != tt.want {
			t.Errorf("%s: %s, want %s", name, got, tt.want)
		}
		var headers []string
		for _, c := range tbl.ColumnDefinitions {
			headers = append(headers, c.Name)
		}
		if got := strings.Join(headers, ","); got != "Name,Repository,Version,Digest,Targets,Ready,Age" {
			t.Errorf("columns %s", got)
		}
	}
}

// A defaulted tag follows the version: kubectl apply of a manifest without a tag sends only the
// new version, and the new version must not be pushed under the old tag. A chosen tag stays.
func TestDefaultedTagFollowsTheVersion(t *testing.T) {
	e := newEnv(t)
	e.create(artifact("app", "1.0.0")) // tag 1.0.0, as defaulting stores it
	a, err := e.update("app", func(a *gitops.OCIArtifact) { a.Spec.Version = "1.1.0+build.7" })
	if err != nil {
		t.Fatal(err)
	}
	if a.Spec.Tag != "1.1.0_build.7" {
		t.Errorf("tag after a version change = %q, want the new version's tag 1.1.0_build.7", a.Spec.Tag)
	}
	if a, err = e.update("app", func(a *gitops.OCIArtifact) { a.Spec.Version, a.Spec.Tag = "1.2.0", "stable" }); err != nil || a.Spec.Tag != "stable" {
		t.Fatalf("choosing a tag with a version: %v %q", err, a.Spec.Tag)
	}
	if a, err = e.update("app", func(a *gitops.OCIArtifact) { a.Spec.Version = "1.3.0" }); err != nil || a.Spec.Tag != "stable" {
		t.Errorf("a chosen tag must stay when the version changes: %v %q", err, a.Spec.Tag)
	}
}
