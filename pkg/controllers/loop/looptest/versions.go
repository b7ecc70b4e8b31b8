package looptest

import (
	"errors"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clienttesting "k8s.io/client-go/testing"
)

// ResourceVersions makes the fake clientset's updates of resource (the object and its
// subresources) behave as an API server's: an update must carry the stored object's
// resourceVersion or it fails with a conflict (409), and each update stores the object under a
// new resourceVersion. The fake object tracker checks neither, so without this a controller
// writing from a stale cache would pass unnoticed.
func ResourceVersions(fake *clienttesting.Fake, tracker clienttesting.ObjectTracker, gvr schema.GroupVersionResource) {
	fake.PrependReactor("update", gvr.Resource, func(action clienttesting.Action) (bool, runtime.Object, error) {
		obj := action.(clienttesting.UpdateAction).GetObject().DeepCopyObject()
		m, err := meta.Accessor(obj)
		if err != nil {
			return true, nil, err
		}
		stored, err := tracker.Get(gvr, action.GetNamespace(), m.GetName())
		if err != nil {
			return true, nil, err
		}
		sm, err := meta.Accessor(stored)
		if err != nil {
			return true, nil, err
		}
		if sm.GetResourceVersion() != m.GetResourceVersion() {
			return true, nil, apierrors.NewConflict(gvr.GroupResource(), m.GetName(),
				errors.New("the object has been modified; please apply your changes to the latest version and try again"))
		}
		n, _ := strconv.Atoi(sm.GetResourceVersion())
		m.SetResourceVersion(strconv.Itoa(n + 1))
		if err := tracker.Update(gvr, obj, action.GetNamespace()); err != nil {
			return true, nil, err
		}
		return true, obj, nil
	})
}
