// Package provisioners is the Provisioners admission plugin: no two score.dev Provisioners
// provide the same type for the same class and id. Resolution picks the most specific
// provisioner (type + class + id, then type + class, then type), so two objects with equal
// type, class and id (an unset class or id meaning any) would leave the choice between them to
// chance; the second is refused instead.
//
// The refusal is a 422 Invalid with a Duplicate cause at spec.type naming the other object, as
// Kubernetes refuses a Service whose nodePort another Service holds: 409 AlreadyExists means an
// object of the same name exists, and clients that see it switch to get-and-update, which here
// would change nothing.
//
// Provisioners come from the Plinth informer, never from etcd per request. Two provisioners
// created at the same instant with the same type, class and id can both pass (each sees the
// other's cache without it); updates that keep type, class and id are not judged, so such a
// pair can still be edited or deleted.
package provisioners

import (
	"context"
	"fmt"
	"io"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission"

	"github.com/plinth-dev/plinth/pkg/admission/initializer"
	"github.com/plinth-dev/plinth/pkg/apis/score"
	informers "github.com/plinth-dev/plinth/pkg/generated/informers/externalversions"
	listers "github.com/plinth-dev/plinth/pkg/generated/listers/score/v1b1"
)

// PluginName is the plugin's name in --enable-admission-plugins and the plugin order.
const PluginName = "Provisioners"

// Register adds the plugin to a registry.
func Register(plugins *admission.Plugins) {
	plugins.Register(PluginName, func(io.Reader) (admission.Interface, error) { return New(), nil })
}

// Plugin is the Provisioners admission plugin.
type Plugin struct {
	*admission.Handler
	provisioners listers.ProvisionerLister
}

var (
	_ admission.ValidationInterface          = &Plugin{}
	_ initializer.WantsPlinthInformerFactory = &Plugin{}
)

// New returns a plugin for Provisioner creates and updates.
func New() *Plugin {
	return &Plugin{Handler: admission.NewHandler(admission.Create, admission.Update)}
}

// SetPlinthInformerFactory reads Provisioners from the factory; the plugin is ready once that
// cache has synced.
func (p *Plugin) SetPlinthInformerFactory(f informers.SharedInformerFactory) {
	i := f.Score().V1b1().Provisioners()
	p.provisioners = i.Lister()
	p.SetReadyFunc(i.Informer().HasSynced)
}

// ValidateInitialization requires the Provisioner informer.
func (p *Plugin) ValidateInitialization() error {
	if p.provisioners == nil {
		return fmt.Errorf("%s admission plugin needs the Plinth informer factory", PluginName)
	}
	return nil
}

// Validate refuses a Provisioner whose type, class and id another Provisioner already has:
// 422 Invalid with a Duplicate cause at spec.type naming that object.
func (p *Plugin) Validate(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if a.GetSubresource() != "" || a.GetResource().GroupResource() != score.Resource("provisioners") {
		return nil
	}
	prov, ok := a.GetObject().(*score.Provisioner)
	if !ok || prov.Spec.Type == "" {
		// An empty type is validation's to report (Required), not a match to look for.
		return nil
	}
	if old, ok := a.GetOldObject().(*score.Provisioner); ok && a.GetOperation() == admission.Update && sameMatch(&old.Spec, &prov.Spec) {
		return nil
	}
	if !p.WaitForReady() {
		return admission.NewForbidden(a, fmt.Errorf("not yet ready to handle request"))
	}
	all, err := p.provisioners.List(labels.Everything())
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	for _, o := range all {
		if o.Name == a.GetName() || o.Spec.Type != prov.Spec.Type || !equalOrBothAny(o.Spec.Class, prov.Spec.Class) || !equalOrBothAny(o.Spec.ID, prov.Spec.ID) {
			continue
		}
		dup := field.Duplicate(field.NewPath("spec", "type"), prov.Spec.Type)
		dup.Detail = fmt.Sprintf("Provisioner %s already provides this type for %s and %s; two provisioners of the same type, class and id would be ambiguous",
			o.Name, describe("class", prov.Spec.Class), describe("id", prov.Spec.ID))
		return apierrors.NewInvalid(score.Kind("Provisioner"), a.GetName(), field.ErrorList{dup})
	}
	return nil
}

// sameMatch is true when two specs match the same resources: equal type, class and id.
func sameMatch(a, b *score.ProvisionerSpec) bool {
	return a.Type == b.Type && equalOrBothAny(a.Class, b.Class) && equalOrBothAny(a.ID, b.ID)
}

// equalOrBothAny compares an optional class or id: unset matches any, which only another unset
// one equals.
func equalOrBothAny(a, b *string) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}

// describe names a class or id for the refusal: "class large", or "any class" when unset.
func describe(what string, value *string) string {
	if value == nil {
		return "any " + what
	}
	return fmt.Sprintf("%s %q", what, *value)
}
