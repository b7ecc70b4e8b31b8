// Package cluster is the REST storage of platform.plinth.dev Clusters. A Cluster's kubeconfig
// is write-only: the API accepts it on create and update, the storage seals it with
// AES-256-GCM before it reaches the watch cache or etcd (seal.go), and every response — get,
// list, watch, tables, create and update results, dry runs — leaves it out (redact.go). Only
// the clusters/credentials subresource returns it, and only sealed, for plinth-controller,
// which holds the key file.
package cluster

import (
	"cmp"
	"context"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage"

	"github.com/plinth-dev/plinth/pkg/apis/platform"
	"github.com/plinth-dev/plinth/pkg/apis/platform/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/apis/platform/validation"
	"github.com/plinth-dev/plinth/pkg/credentials"
	"github.com/plinth-dev/plinth/pkg/keyring"
	"github.com/plinth-dev/plinth/pkg/registry/store"
	"github.com/plinth-dev/plinth/pkg/registry/strategy"
	"github.com/plinth-dev/plinth/pkg/registry/table"
)

// lastAppliedAnnotation is where client-side kubectl apply keeps the whole applied manifest,
// kubeconfig included, unless the server takes it out.
const lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// definition is the Cluster's validation and its write-only kubeconfig handling.
func definition(keys keyring.Source) strategy.Definition[*platform.Cluster] {
	return strategy.Definition[*platform.Cluster]{
		NamespaceScoped:      false,
		APIVersions:          []string{v1alpha1.SchemeGroupVersion.String()},
		Validate:             validation.ValidateCluster,
		ValidateUpdate:       validation.ValidateClusterUpdate,
		ValidateStatusUpdate: validation.ValidateClusterStatusUpdate,
		PrepareForCreate:     func(_ context.Context, c *platform.Cluster) { stripLastApplied(c) },
		RetainOnUpdate: func(c, old *platform.Cluster) {
			retainKubeconfig(c, old, keys)
			stripLastApplied(c)
		},
	}
}

// retainKubeconfig keeps the stored kubeconfig when an update leaves it out (clients never see
// it) or sends the same one again (kubectl apply and GitOps tools send the whole manifest on
// every sync): neither is a spec change, so the generation stays and nothing is sealed anew.
func retainKubeconfig(c, old *platform.Cluster, keys keyring.Source) {
	if c.Spec.Kubeconfig == "" {
		c.Spec.Kubeconfig = old.Spec.Kubeconfig
		return
	}
	keyID, sealed, ok := openEnvelope(old.Spec.Kubeconfig)
	if !ok || keys == nil || c.Spec.Kubeconfig == old.Spec.Kubeconfig {
		return
	}
	plain, err := keys.Keyring().Open(keyID, sealed, credentials.AdditionalData(old.Name, old.UID))
	if err == nil && subtle.ConstantTimeCompare(plain, []byte(c.Spec.Kubeconfig)) == 1 {
		c.Spec.Kubeconfig = old.Spec.Kubeconfig
	}
}

// stripLastApplied removes spec.kubeconfig from kubectl's last-applied annotation. kubectl
// apply then sees the kubeconfig as new each time and sends it again, which is harmless: the
// storage seals it again.
func stripLastApplied(c *platform.Cluster) {
	raw, ok := c.Annotations[lastAppliedAnnotation]
	if !ok {
		return
	}
	var applied map[string]any
	if err := json.Unmarshal([]byte(raw), &applied); err != nil {
		delete(c.Annotations, lastAppliedAnnotation) // unreadable: keep nothing of it
		return
	}
	spec, _ := applied["spec"].(map[string]any)
	if _, has := spec["kubeconfig"]; !has {
		return
	}
	delete(spec, "kubeconfig")
	out, err := json.Marshal(applied)
	if err != nil {
		delete(c.Annotations, lastAppliedAnnotation)
		return
	}
	c.Annotations[lastAppliedAnnotation] = string(out)
}

// REST is the clusters resource; every object it returns is redacted. It has no
// delete-collection (see noCollectionDelete).
type REST struct {
	*store.REST
	noCollectionDelete
	keys keyring.Source
	// hosted lists the objects placed on a cluster ("namespace/name" of ManagedVMs); a cluster
	// that hosts any cannot be deleted. Set by the server once the governance group exists.
	hosted func(ctx context.Context, cluster string) ([]string, error)
}

// noCollectionDelete takes the generic store's DeleteCollection out of REST's method set: a
// method of that name one level shallower, with another signature, hides the store's, so REST
// is not a rest.CollectionDeleter. Clusters are deleted one at a time, each checked for the
// VMs it hosts; a collection delete would skip that check. Without the verb, discovery, kubectl
// and RBAC audits tell the same as the server, which would refuse it anyway.
type noCollectionDelete struct{}

// DeleteCollection is never served (see noCollectionDelete).
func (noCollectionDelete) DeleteCollection() {}

// GuardDeletion makes deletes of a cluster that still hosts something fail: hosted lists what
// a cluster hosts.
func (r *REST) GuardDeletion(hosted func(ctx context.Context, cluster string) ([]string, error)) {
	r.hosted = hosted
}

// StatusREST is clusters/status; the objects it returns are redacted too.
type StatusREST struct {
	*store.StatusREST
}

// NewREST returns the clusters resource, its status and its credentials subresource. keys seal
// the kubeconfigs; without keys, Clusters can be read but not created.
func NewREST(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter, keys keyring.Source) (*REST, *StatusREST, *CredentialsREST, error) {
	main, status, err := store.New(scheme, optsGetter, store.Options[*platform.Cluster]{
		Resource:    platform.Resource("clusters"),
		Singular:    "cluster",
		NewFunc:     func() *platform.Cluster { return &platform.Cluster{} },
		NewListFunc: func() runtime.Object { return &platform.ClusterList{} },
		Definition:  definition(keys),
		SelectableFields: func(c *platform.Cluster) fields.Set {
			return fields.Set{"status.phase": string(c.Status.Phase)}
		},
		Table:       Table,
		ShortNames:  []string{"tc"},
		Categories:  []string{"platform"},
		WrapStorage: func(s storage.Interface) storage.Interface { return &sealingStorage{Interface: s, keys: keys} },
	})
	if err != nil {
		return nil, nil, nil, err
	}
	return &REST{REST: main, keys: keys}, &StatusREST{status}, &CredentialsREST{store: main.Store}, nil
}

// Get returns a cluster without its kubeconfig.
func (r *REST) Get(ctx context.Context, name string, options *metav1.GetOptions) (runtime.Object, error) {
	return redacted(r.REST.Get(ctx, name, options))
}

// List returns clusters without their kubeconfigs.
func (r *REST) List(ctx context.Context, options *metainternalversion.ListOptions) (runtime.Object, error) {
	return redacted(r.REST.List(ctx, options))
}

// Watch streams clusters without their kubeconfigs.
func (r *REST) Watch(ctx context.Context, options *metainternalversion.ListOptions) (watch.Interface, error) {
	return redactedWatch(r.REST.Watch(ctx, options))
}

// Create stores a cluster with its kubeconfig sealed and returns it without.
func (r *REST) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, options *metav1.CreateOptions) (runtime.Object, error) {
	if r.keys == nil {
		// Refused before anything runs, so a dry run answers as the real request would.
		return nil, errNoKeys()
	}
	return redacted(r.REST.Create(ctx, obj, createValidation, options))
}

// Update changes a cluster (sealing a new kubeconfig) and returns it without the kubeconfig.
func (r *REST) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc,
	updateValidation rest.ValidateObjectUpdateFunc, forceAllowCreate bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	obj, created, err := r.REST.Update(ctx, name, objInfo, createValidation, updateValidation, forceAllowCreate, options)
	obj, err = redacted(obj, err)
	return obj, created, err
}

// Delete deletes a cluster that hosts nothing; the returned object has no kubeconfig. A
// cluster with VMs on it stays registered: without its credentials, nothing could remove them.
func (r *REST) Delete(ctx context.Context, name string, deleteValidation rest.ValidateObjectFunc, options *metav1.DeleteOptions) (runtime.Object, bool, error) {
	if r.hosted != nil {
		hosted, err := r.hosted(ctx, name)
		if err != nil {
			return nil, false, err
		}
		if len(hosted) > 0 {
			return nil, false, apierrors.NewConflict(platform.Resource("clusters"), name,
				fmt.Errorf("it hosts %d ManagedVM(s) (%s); delete them first", len(hosted), strings.Join(hosted[:min(len(hosted), 5)], ", ")))
		}
	}
	obj, deleted, err := r.REST.Delete(ctx, name, deleteValidation, options)
	obj, err = redacted(obj, err)
	return obj, deleted, err
}

// Get returns the cluster without its kubeconfig.
func (r *StatusREST) Get(ctx context.Context, name string, options *metav1.GetOptions) (runtime.Object, error) {
	return redacted(r.StatusREST.Get(ctx, name, options))
}

// Update changes the status and returns the cluster without its kubeconfig.
func (r *StatusREST) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc,
	updateValidation rest.ValidateObjectUpdateFunc, forceAllowCreate bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	obj, created, err := r.StatusREST.Update(ctx, name, objInfo, createValidation, updateValidation, forceAllowCreate, options)
	obj, err = redacted(obj, err)
	return obj, created, err
}

// Table prints PHASE, KUBEVIRT, API SERVER and, wide, KUBERNETES, FEATURES and KEY.
var Table = table.New([]table.Column{
	{Name: "Phase", Type: "string", Description: "What the last probe found: UNKNOWN, HEALTHY, UNHEALTHY or UNREACHABLE."},
	{Name: "KubeVirt", Type: "string", Description: "The KubeVirt version on the cluster."},
	{Name: "API Server", Type: "string", Description: "The server of the kubeconfig's current context."},
	{Name: "Kubernetes", Type: "string", Description: "The cluster's Kubernetes version.", Wide: true},
	{Name: "Features", Type: "string", Description: "Enabled KubeVirt feature gates.", Wide: true},
	{Name: "Key", Type: "string", Description: "The key that encrypts the stored kubeconfig.", Wide: true},
}, func(c *platform.Cluster) []interface{} {
	phase := cmp.Or(c.Status.Phase, platform.ClusterPhaseUnknown)
	features := strings.Join(c.Status.EnabledFeatures, ",")
	return []interface{}{string(phase), table.OrNone(c.Status.KubevirtVersion), table.OrNone(c.Status.APIServerURL),
		table.OrNone(c.Status.KubernetesVersion), table.OrNone(features), table.OrNone(c.Status.EncryptionKeyID)}
})
