// Package clusterpack is the REST storage of infrastructure.ontai.dev
// InfrastructureClusterPacks: what plinth-controller renders and delivers to target Clusters.
package clusterpack

import (
	"fmt"

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

// Definition is the pack's validation for the generic strategies.
var Definition = strategy.Definition[*infrastructure.InfrastructureClusterPack]{
	NamespaceScoped:      true,
	APIVersions:          []string{v1alpha1.SchemeGroupVersion.String()},
	Validate:             validation.ValidateInfrastructureClusterPack,
	ValidateUpdate:       validation.ValidateInfrastructureClusterPackUpdate,
	ValidateStatusUpdate: validation.ValidateInfrastructureClusterPackStatusUpdate,
}

// NewREST returns the infrastructureclusterpacks resource and its status subresource.
func NewREST(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter) (*store.REST, *store.StatusREST, error) {
	return store.New(scheme, optsGetter, store.Options[*infrastructure.InfrastructureClusterPack]{
		Resource:         infrastructure.Resource("infrastructureclusterpacks"),
		Singular:         "infrastructureclusterpack",
		NewFunc:          func() *infrastructure.InfrastructureClusterPack { return &infrastructure.InfrastructureClusterPack{} },
		NewListFunc:      func() runtime.Object { return &infrastructure.InfrastructureClusterPackList{} },
		Definition:       Definition,
		SelectableFields: SelectableFields,
		Table:            Table,
		ShortNames:       []string{"clusterpacks", "clusterpack", "icp"},
		Categories:       []string{"plinth", "packs"},
	})
}

// SelectableFields are the fields beyond metadata that list and watch select on, as
// v1alpha1.FieldSelectors registers them.
func SelectableFields(p *infrastructure.InfrastructureClusterPack) fields.Set {
	return fields.Set{"spec.version": p.Spec.Version}
}

// Table prints VERSION, REVISION, CONTENT, CLUSTERS, READY and DRIFTED.
var Table = table.New([]table.Column{
	{Name: "Version", Type: "string", Description: "The pack's version, vX.Y.Z[-rN]."},
	{Name: "Revision", Type: "integer", Description: "The rendered revision being delivered."},
	{Name: "Content", Type: "string", Description: "chart <name>@<version>, kustomize or manifests."},
	{Name: "Clusters", Type: "string", Description: "Target clusters running the current revision (drifted or not), of all targets."},
	{Name: "Drifted", Type: "integer", Description: "Target clusters whose objects drifted."},
	{Name: "Ready", Type: "string", Description: "The Ready condition's status."},
}, func(p *infrastructure.InfrastructureClusterPack) []interface{} {
	content := "manifests"
	switch {
	case p.Spec.Chart != nil:
		v := p.Spec.Chart.Version
		if p.Status.ChartVersion != "" {
			v = p.Status.ChartVersion
		}
		content = "chart " + p.Spec.Chart.Name + "@" + v
	case p.Spec.Kustomize != nil:
		content = "kustomize"
	}
	ready := string(metav1.ConditionUnknown)
	if c := meta.FindStatusCondition(p.Status.Conditions, infrastructure.ConditionReady); c != nil {
		ready = string(c.Status)
	}
	return []interface{}{p.Spec.Version, p.Status.Revision, content,
		fmt.Sprintf("%d/%d", p.Status.Summary.Ready+p.Status.Summary.Drifted, len(p.Status.Clusters)), p.Status.Summary.Drifted, ready}
})
