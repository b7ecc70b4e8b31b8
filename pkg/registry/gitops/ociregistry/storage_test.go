package ociregistry

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/plinth-dev/plinth/pkg/registry/store/storetest"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/plinth-dev/plinth/pkg/apis/gitops"
	"github.com/plinth-dev/plinth/pkg/registry/gitops/gitopstest"
)

func registry(name string, port int32) *gitops.OCIRegistry {
	return &gitops.OCIRegistry{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       gitops.OCIRegistrySpec{Endpoint: fmt.Sprintf("localhost:%d", port), Port: port},
	}
}

// update updates name through r as an update request does.
var update = storetest.Update[*gitops.OCIRegistry]

// A registry is stored NotProvisioned whatever status the client sent; where it listens cannot
// change; plinth-controller reports through the status subresource, and lists select on the
// phase.
func TestRegistryLifecycle(t *testing.T) {
	main, status, err := NewREST(gitopstest.Scheme, gitopstest.RunEtcd(t).OptionsGetter())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(main.Destroy)
	ctx := gitopstest.As("plinth-system", "dana", "platform:admins")

	sent := registry("local-registry", 5000)
	sent.Status.Phase = gitops.RegistryPhaseRunning
	obj, err := main.Create(ctx, sent, rest.ValidateAllObjectFunc, &metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if phase := obj.(*gitops.OCIRegistry).Status.Phase; phase != gitops.RegistryPhaseNotProvisioned {
		t.Errorf("phase %q, want NotProvisioned", phase)
	}
	if _, err := main.Create(ctx, registry("public", 5001), rest.ValidateAllObjectFunc, &metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	bad := registry("remote", 5002)
	bad.Spec.Endpoint = "registry.example.com:5002"
	_, err = main.Create(ctx, bad, rest.ValidateAllObjectFunc, &metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.endpoint") {
		t.Fatalf("a registry on another host: %v", err)
	}

	_, err = update(ctx, main, "local-registry", func(r *gitops.OCIRegistry) { r.Spec.Endpoint, r.Spec.Port = "localhost:5005", 5005 })
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "field is immutable") {
		t.Fatalf("moving the registry: %v", err)
	}
	r, err := update(ctx, main, "local-registry", func(r *gitops.OCIRegistry) {
		r.Spec.Retention = &gitops.RetentionPolicy{KeepVersions: 3}
		r.Status.Phase = gitops.RegistryPhaseError // the main resource keeps the stored status
	})
	if err != nil {
		t.Fatal(err)
	}
	if r.Generation != 2 || r.Status.Phase != gitops.RegistryPhaseNotProvisioned {
		t.Errorf("after a retention change: generation %d phase %s", r.Generation, r.Status.Phase)
	}

	r, err = update(ctx, status, "local-registry", func(r *gitops.OCIRegistry) {
		r.Status.Phase, r.Status.URL = gitops.RegistryPhaseRunning, "http://localhost:5000"
	})
	if err != nil {
		t.Fatal(err)
	}
	if r.Status.Phase != gitops.RegistryPhaseRunning {
		t.Errorf("status update: %+v", r.Status)
	}
	if _, err := update(ctx, status, "local-registry", func(r *gitops.OCIRegistry) { r.Status.Phase = "Up" }); !apierrors.IsInvalid(err) {
		t.Errorf("an unknown phase: %v", err)
	}

	list, err := main.List(ctx, &metainternalversion.ListOptions{FieldSelector: fields.OneTermEqualSelector("status.phase", "Running")})
	if err != nil {
		t.Fatal(err)
	}
	if items := list.(*gitops.OCIRegistryList).Items; len(items) != 1 || items[0].Name != "local-registry" {
		t.Errorf("status.phase=Running: %+v", items)
	}
}

func TestTable(t *testing.T) {
	var headers []string
	for name, tt := range map[string]struct {
		retention *gitops.RetentionPolicy
		phase     gitops.RegistryPhase
		want      string
	}{
		"new":         {nil, "", "[localhost:5000 <none> all]"},
		"keep 0":      {&gitops.RetentionPolicy{}, gitops.RegistryPhaseProvisioning, "[localhost:5000 Provisioning all]"},
		"keep 5":      {&gitops.RetentionPolicy{KeepVersions: 5}, gitops.RegistryPhaseRunning, "[localhost:5000 Running 5]"},
		"broken disk": {&gitops.RetentionPolicy{KeepVersions: 1}, gitops.RegistryPhaseError, "[localhost:5000 Error 1]"},
	} {
		r := registry("local-registry", 5000)
		r.Spec.Retention, r.Status.Phase = tt.retention, tt.phase
		tbl, err := Table.ConvertToTable(context.Background(), r, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(tbl.Rows[0].Cells[1:4]); got != tt.want {
			t.Errorf("%s: %s, want %s", name, got, tt.want)
		}
		headers = headers[:0]
		for _, c := range tbl.ColumnDefinitions {
			headers = append(headers, c.Name)
		}
	}
	if got := strings.Join(headers, ","); got != "Name,Endpoint,Phase,Keep,Age" {
		t.Errorf("columns %s", got)
	}
}
