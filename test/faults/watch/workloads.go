package watch

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	scoreclient "github.com/plinth-dev/plinth/pkg/generated/clientset/versioned/typed/score/v1b1"
)

// Workloads is the Source of the Workloads of one namespace.
func Workloads(client scoreclient.WorkloadInterface) Source { return workloads{client} }

type workloads struct{ client scoreclient.WorkloadInterface }

func (w workloads) List(ctx context.Context) ([]runtime.Object, string, error) {
	list, err := w.client.List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, "", err
	}
	items := make([]runtime.Object, len(list.Items))
	for i := range list.Items {
		items[i] = &list.Items[i]
	}
	return items, list.ResourceVersion, nil
}

func (w workloads) Watch(ctx context.Context, rv string) (watch.Interface, error) {
	return w.client.Watch(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true})
}
