package ociartifact

import (
	"testing"

	kubeinformers "k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/events"

	platformv1alpha1 "github.com/plinth-dev/plinth/pkg/apis/platform/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/controllers/loop/looptest"
	"github.com/plinth-dev/plinth/pkg/generated/clientset/versioned/fake"
	informers "github.com/plinth-dev/plinth/pkg/generated/informers/externalversions"
	"github.com/plinth-dev/plinth/pkg/gitops/delivery"
)

// A reconcile before the registry, Cluster or ConfigMap caches fill would report them missing.
func TestWaitsForEveryCacheItReads(t *testing.T) {
	looptest.ExpectWaitsForEveryRead(t, func(t *testing.T) (looptest.Controller, []*clienttesting.Fake, func(<-chan struct{})) {
		plinth, kube := fake.NewSimpleClientset(), kubefake.NewSimpleClientset()
		pf, kf := informers.NewSharedInformerFactory(plinth, 0), kubeinformers.NewSharedInformerFactory(kube, 0)
		gitops, platform, core := pf.Gitops().V1alpha1(), pf.Platform().V1alpha1(), kf.Core().V1()
		c, err := NewController(plinth, events.NewFakeRecorder(10), gitops.OCIArtifacts(), gitops.OCIRegistries(), platform.Clusters(),
			core.ConfigMaps(), map[platformv1alpha1.GitOpsEngine]delivery.Engine{}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		return c, []*clienttesting.Fake{&plinth.Fake, &kube.Fake}, func(stop <-chan struct{}) { pf.Start(stop); kf.Start(stop) }
	})
}
