package apiserver

import (
	"context"
	"io"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/rest"

	"github.com/plinth-dev/plinth/pkg/apis/common"
	"github.com/plinth-dev/plinth/pkg/apis/compute"
	"github.com/plinth-dev/plinth/pkg/apis/gitops"
	"github.com/plinth-dev/plinth/pkg/generated/clientset/versioned/fake"
	informers "github.com/plinth-dev/plinth/pkg/generated/informers/externalversions"
)

// Plinth's plugins come right after namespace lifecycle and ResourceQuota last, as in
// kube-apiserver: nothing another plugin refuses is charged to a quota.
func TestAdmissionPluginOrder(t *testing.T) {
	a := NewOptions(io.Discard).Recommended.Admission
	want := []string{"NamespaceLifecycle", "PlatformPolicy", "TenantCompute", "GitOpsTargets", "PackTargets", "Provisioners",
		"MutatingAdmissionPolicy",
		"MutatingAdmissionWebhook", "ValidatingAdmissionPolicy", "ValidatingAdmissionWebhook", "ResourceQuota"}
	if !slices.Equal(a.RecommendedPluginOrder, want) {
		t.Errorf("plugin order %v, want %v", a.RecommendedPluginOrder, want)
	}
	for _, name := range want {
		if !slices.Contains(a.Plugins.Registered(), name) {
			t.Errorf("%s is not registered", name)
		}
		if a.DefaultOffPlugins.Has(name) {
			t.Errorf("%s is off by default", name)
		}
	}
}

// The standalone server has no Kubernetes admission chain and no ResourceQuotas, but still
// refuses a TenantCompute whose provider does not exist, and one placed on a Cluster its
// author may not use, asking the authorizer it is given.
func TestStandaloneAdmissionChecksProviders(t *testing.T) {
	o := NewOptions(io.Discard)
	o.informers = informers.NewSharedInformerFactory(fake.NewSimpleClientset(), 0)
	cfg := &genericapiserver.RecommendedConfig{Config: genericapiserver.Config{LoopbackClientConfig: &rest.Config{Host: "https://127.0.0.1:1"}}}
	// As standalone's delegated authorizer: system:masters may do anything, nobody else.
	authz := authorizer.AuthorizerFunc(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
		if slices.Contains(a.GetUser().GetGroups(), user.SystemPrivilegedGroup) {
			return authorizer.DecisionAllow, "", nil
		}
		return authorizer.DecisionNoOpinion, "", nil
	})
	chain, err := o.standaloneAdmission(cfg, authz)
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	defer close(stop)
	o.informers.Start(stop)
	o.informers.WaitForCacheSync(stop)

	validate := func(tc *compute.TenantCompute, u user.Info) error {
		a := admission.NewAttributesRecord(tc, nil, compute.Kind("TenantCompute").WithVersion(""), tc.Namespace, tc.Name,
			compute.Resource("tenantcomputes").WithVersion(""), "", admission.Create, &metav1.CreateOptions{}, false, u)
		return chain.(admission.ValidationInterface).Validate(context.Background(), a, nil)
	}
	alice := &user.DefaultInfo{Name: "alice"}
	tc := &compute.TenantCompute{
		ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "team-a"},
		Spec:       compute.TenantComputeSpec{TenantID: "shop", ProviderType: "docker"},
	}
	if err := validate(tc, alice); !apierrors.IsInvalid(err) {
		t.Errorf("TenantCompute with an unknown provider: %v, want 422", err)
	}
	tc.Spec.ProviderConfig = &common.RawObject{Raw: []byte(`{"cluster": "prod"}`)}
	if err := validate(tc, alice); !apierrors.IsForbidden(err) {
		t.Errorf("alice places a TenantCompute on Cluster prod: %v, want 403", err)
	}
	admin := &user.DefaultInfo{Name: "admin", Groups: []string{user.SystemPrivilegedGroup}}
	if err := validate(tc, admin); !apierrors.IsInvalid(err) {
		t.Errorf("system:masters places a TenantCompute on Cluster prod: %v, want the provider's 422 only", err)
	}

	// GitOpsTargets is in the chain: an OCIArtifact for a Cluster that does not exist is refused.
	artifact := &gitops.OCIArtifact{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "plinth-system"},
		Spec: gitops.OCIArtifactSpec{Targets: []gitops.ArtifactTarget{{Cluster: "prod"}}}}
	a := admission.NewAttributesRecord(artifact, nil, gitops.Kind("OCIArtifact").WithVersion(""), artifact.Namespace, artifact.Name,
		gitops.Resource("ociartifacts").WithVersion(""), "", admission.Create, &metav1.CreateOptions{}, false, admin)
	if err := chain.(admission.ValidationInterface).Validate(context.Background(), a, nil); !apierrors.IsInvalid(err) ||
		!strings.Contains(err.Error(), "spec.targets[0].cluster") {
		t.Errorf("an OCIArtifact for Cluster prod, which does not exist: %v, want 422", err)
	}
}
