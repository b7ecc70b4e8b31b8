// Package packinstance is the REST storage of infrastructure.ontai.dev
// InfrastructurePackInstances: plinth-controller's record of a pack delivered to a cluster.
package packinstance

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"

	"github.com/plinth-dev/plinth/pkg/apis/infrastructure"
	"github.com/plinth-dev/plinth/pkg/apis/infrastructure/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/apis/infrastructure/validation"
	"github.com/plinth-dev/plinth/pkg/registry/store"
	"github.com/plinth-dev/plinth/pkg/registry/strategy"
	"github.com/plinth-dev/plinth/pkg/registry/table"
)

// Definition is the instance's validation for the generic strategies.
var Definition = strategy.Definition[*infrastructure.InfrastructurePackInstance]{
	NamespaceScoped:      true,
	APIVersions:          []string{v1alpha1.SchemeGroupVersion.String()},
	Validate:             validation.ValidateInfrastructurePackInstance,
	ValidateUpdate:       validation.ValidateInfrastructurePackInstanceUpdate,
	ValidateStatusUpdate: validation.ValidateInfrastructurePackInstanceStatusUpdate,
}

// NewREST returns the infrastructurepackinstances resource and its status subresource.
func NewREST(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter) (*store.REST, *store.StatusREST, error) {
	return store.New(scheme, optsGetter, store.Options[*infrastructure.InfrastructurePackInstance]{
		Resource:         infrastructure.Resource("infrastructurepackinstances"),
		Singular:         "infrastructurepackinstance",
		NewFunc:          func() *infrastructure.InfrastructurePackInstance { return &infrastructure.InfrastructurePackInstance{} },
		NewListFunc:      func() runtime.Object { return &infrastructure.InfrastructurePackInstanceList{} },
		Definition:       Definition,
		SelectableFields: SelectableFields,
		Table:            Table,
		ShortNames:       []string{"packinstances", "packinstance", "ipi"},
		Categories:       []string{"plinth", "packs"},
	})
}

// SelectableFields are the fields beyond metadata that list and watch select on, as
// v1alpha1.FieldSelectors registers them.
func SelectableFields(i *infrastructure.InfrastructurePackInstance) fields.Set {
	return fields.Set{
		"spec.clusterPackRef":   i.Spec.ClusterPackRef,
		"spec.targetClusterRef": i.Spec.TargetClusterRef,
		"spec.version":          i.Spec.Version,
	}
}

// Table prints PACK, CLUSTER, VERSION, DIRECTION, READY and DRIFTED, as the issue asks.
var Table = table.New([]table.Column{
	{Name: "Pack", Type: "string", Description: "The InfrastructureClusterPack delivered."},
	{Name: "Cluster", Type: "string", Description: "The Cluster it was delivered to."},
	{Name: "Version", Type: "string", Description: "The pack version delivered."},
	{Name: "Direction", Type: "string", Description: "Initial, Upgrade, Rollback or Redeploy: the last version transition."},
	{Name: "Ready", Type: "string", Description: "The Ready condition's status."},
	{Name: "Drifted", Type: "string", Description: "The Drifted condition's status."},
}, func(i *infrastructure.InfrastructurePackInstance) []interface{} {
	return []interface{}{i.Spec.ClusterPackRef, i.Spec.TargetClusterRef, i.Spec.Version,
		table.OrNone(string(i.Status.UpgradeDirection)), condition(i, infrastructure.ConditionReady), condition(i, infrastructure.ConditionDrifted)}
})

func condition(i *infrastructure.InfrastructurePackInstance, t string) string {
	if c := meta.FindStatusCondition(i.Status.Conditions, t); c != nil {
		return string(c.Status)
	}
	return string(metav1.ConditionUnknown)
}
