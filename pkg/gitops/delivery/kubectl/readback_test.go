package kubectl

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"

	gitopsv1alpha1 "github.com/plinth-dev/plinth/pkg/apis/gitops/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/gitops/delivery"
)

// reads lists the reads made: GET resource/namespace/name and LIST resource/namespace (limit).
func reads(client *dynamicfake.FakeDynamicClient) []string {
	var out []string
	for _, a := range client.Actions() {
		switch r := a.(type) {
		case clienttesting.GetActionImpl:
			out = append(out, "GET "+r.GetResource().Resource+"/"+r.GetNamespace()+"/"+r.GetName())
		case clienttesting.ListActionImpl:
			out = append(out, "LIST "+r.GetResource().Resource+"/"+r.GetNamespace()+" limit "+strconv.FormatInt(r.ListOptions.Limit, 10))
		}
	}
	return out
}

// The objects of one resource in one namespace are read back with one list (a page of twice
// as many), a lone one with a GET; what the list finds is checked as a GET's answer would be.
func TestDeliverReadsBackWithAListPerResourceAndNamespace(t *testing.T) {
	art := artifact(
		object("v1", "Namespace", "", "shop"),
		object("v1", "ConfigMap", "shop", "a"),
		object("apps/v1", "Deployment", "shop", "web"),
		object("v1", "ConfigMap", "shop", "b"),
		object("v1", "ConfigMap", "cache", "c"),
	)
	wantReads := []string{"LIST configmaps/shop limit 4", "GET namespaces//shop", "GET deployments/shop/web", "GET configmaps/cache/c"}

	client, clients := newCluster(t, existing(configMapsGVR, "ConfigMap", "shop", "b", label), existing(configMapsGVR, "ConfigMap", "shop", "other", "x"))
	status, err := New(clients).Deliver(context.Background(), art, target(false, nil))
	if err != nil || !status.Ready {
		t.Fatalf("status %+v, err %v", status, err)
	}
	if diff := cmp.Diff(wantReads, reads(client), sortStrings); diff != "" {
		t.Errorf("reads (-want +got):\n%s", diff)
	}

	// Another artifact's ConfigMap among those listed refuses the version.
	client, clients = newCluster(t, existing(configMapsGVR, "ConfigMap", "shop", "b", delivery.ArtifactLabel("team-b", "other")))
	status, err = New(clients).Deliver(context.Background(), art, target(false, nil))
	if err == nil || !strings.HasPrefix(status.Message, "ConfigMap shop/b (000-configmap-b.yaml#1) exists on cluster east and was not created by OCIArtifact team-a/app") {
		t.Errorf("status %+v, err %v", status, err)
	}
	if len(applied(client)) != 0 {
		t.Errorf("applied %v", applied(client))
	}
}

// A list that returns one page of a crowded namespace leaves the objects it does not hold to a
// GET each; a list the identity may not make falls back to a GET each; a list that fails
// otherwise fails the delivery before anything is applied.
func TestDeliverReadsBackWhatAListLeaves(t *testing.T) {
	art := artifact(object("v1", "ConfigMap", "shop", "a"), object("v1", "ConfigMap", "shop", "b"), object("v1", "ConfigMap", "shop", "c"))

	t.Run("one page", func(t *testing.T) {
		client, clients := newCluster(t, existing(configMapsGVR, "ConfigMap", "shop", "c", delivery.ArtifactLabel("team-b", "other")))
		client.PrependReactor("list", "configmaps", func(clienttesting.Action) (bool, runtime.Object, error) {
			page := &unstructured.UnstructuredList{}
			page.SetContinue("more")
			page.Items = []unstructured.Unstructured{*existing(configMapsGVR, "ConfigMap", "shop", "a", label)}
			return true, page, nil
		})
		status, err := New(clients).Deliver(context.Background(), art, target(false, nil))
		if want := []string{"LIST configmaps/shop limit 6", "GET configmaps/shop/b", "GET configmaps/shop/c"}; !cmp.Equal(want, reads(client), sortStrings) {
			t.Errorf("reads %v, want %v", reads(client), want)
		}
		// c, read with its GET, is another artifact's.
		if err == nil || !strings.HasPrefix(status.Message, "ConfigMap shop/c ") {
			t.Errorf("status %+v, err %v", status, err)
		}
	})

	t.Run("forbidden", func(t *testing.T) {
		client, clients := newCluster(t)
		client.PrependReactor("list", "configmaps", func(clienttesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(configMapsGVR.GroupResource(), "", errors.New("no"))
		})
		status, err := New(clients).Deliver(context.Background(), art, target(false, nil))
		if err != nil || !status.Ready {
			t.Fatalf("status %+v, err %v", status, err)
		}
		want := []string{"LIST configmaps/shop limit 6", "GET configmaps/shop/a", "GET configmaps/shop/b", "GET configmaps/shop/c"}
		if !cmp.Equal(want, reads(client), sortStrings) {
			t.Errorf("reads %v, want %v", reads(client), want)
		}
	})

	t.Run("failing", func(t *testing.T) {
		client, clients := newCluster(t)
		client.PrependReactor("list", "configmaps", func(clienttesting.Action) (bool, runtime.Object, error) {
			return true, nil, errors.New("connection refused")
		})
		previous := &gitopsv1alpha1.ArtifactTargetStatus{Inventory: []gitopsv1alpha1.InventoryEntry{{ID: "shop_old__ConfigMap", Version: "v1"}}}
		status, err := New(clients).Deliver(context.Background(), art, target(false, previous))
		if err == nil || status.Message != "Listing the ConfigMap objects in namespace shop on cluster east failed: connection refused." {
			t.Errorf("status %+v, err %v", status, err)
		}
		if len(applied(client)) != 0 || !cmp.Equal(previous.Inventory, status.Inventory) {
			t.Errorf("applied %v, inventory %v", applied(client), status.Inventory)
		}
	})

	t.Run("a GET failing", func(t *testing.T) {
		client, clients := newCluster(t)
		client.PrependReactor("get", "configmaps", func(clienttesting.Action) (bool, runtime.Object, error) {
			return true, nil, errors.New("connection refused")
		})
		status, err := New(clients).Deliver(context.Background(), artifact(object("v1", "ConfigMap", "shop", "a")), target(false, nil))
		if err == nil || status.Message != "Reading ConfigMap shop/a (000-configmap-a.yaml#1) on cluster east failed: connection refused." {
			t.Errorf("status %+v, err %v", status, err)
		}
	})
}
