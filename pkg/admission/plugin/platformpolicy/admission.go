// Package platformpolicy is the PlatformPolicy admission plugin: on every Workload create and
// update (dry runs included) it applies the defaults of the matching policies, highest priority
// first, and then rejects a Workload that breaks any matching policy's constraints. Policies
// come from an informer, compiled once per change, never from etcd per request. What a policy
// means lives in pkg/platformpolicy, shared with the orchestrator; this package is the
// admission wiring around it.
package platformpolicy

import (
	"context"
	"fmt"
	"io"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apiserver/pkg/admission"
	kubeinformers "k8s.io/client-go/informers"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/plinth-dev/plinth/pkg/admission/initializer"
	"github.com/plinth-dev/plinth/pkg/apis/score"
	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
	informers "github.com/plinth-dev/plinth/pkg/generated/informers/externalversions"
	policy "github.com/plinth-dev/plinth/pkg/platformpolicy"
	scorespec "github.com/plinth-dev/plinth/pkg/score"
)

// PluginName is the plugin's name in --enable-admission-plugins and the plugin order.
const PluginName = "PlatformPolicy"

// AppliedPoliciesAnnotation lists, comma separated and in the order applied, the policies whose
// defaults changed the workload.
const AppliedPoliciesAnnotation = "score.dev/applied-policies"

// ReasonPolicyViolation is the cause type of a policy rejection, from the Score vocabulary.
const ReasonPolicyViolation metav1.CauseType = "PolicyViolation"

// Register adds the plugin to a registry.
func Register(plugins *admission.Plugins) {
	plugins.Register(PluginName, func(io.Reader) (admission.Interface, error) { return New(), nil })
}

// Plugin is the PlatformPolicy admission plugin.
type Plugin struct {
	*admission.Handler
	policies   policy.Snapshot
	namespaces corelisters.NamespaceLister
	synced     []cache.InformerSynced
}

var (
	_ admission.MutationInterface            = &Plugin{}
	_ admission.ValidationInterface          = &Plugin{}
	_ initializer.WantsPlinthInformerFactory = &Plugin{}
	_ interface {
		SetExternalKubeInformerFactory(kubeinformers.SharedInformerFactory)
	} = &Plugin{}
)

// New returns a plugin for Workload creates and updates.
func New() *Plugin {
	return &Plugin{Handler: admission.NewHandler(admission.Create, admission.Update)}
}

// SetPlinthInformerFactory watches PlatformPolicies.
func (p *Plugin) SetPlinthInformerFactory(f informers.SharedInformerFactory) {
	informer := f.Score().V1b1().PlatformPolicies()
	lister := informer.Lister()
	rebuild := func() {
		all, err := lister.List(labels.Everything())
		if err != nil {
			utilruntime.HandleError(err)
			return
		}
		p.policies.Set(all)
	}
	_, err := informer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(interface{}) { rebuild() },
		UpdateFunc: func(interface{}, interface{}) { rebuild() },
		DeleteFunc: func(interface{}) { rebuild() },
	})
	utilruntime.Must(err)
	p.synced = append(p.synced, informer.Informer().HasSynced)
	p.SetReadyFunc(p.allSynced)
}

// SetExternalKubeInformerFactory gives namespace labels for namespaceSelector. Without it (the
// standalone server has no core API) namespaces have no labels.
func (p *Plugin) SetExternalKubeInformerFactory(f kubeinformers.SharedInformerFactory) {
	informer := f.Core().V1().Namespaces()
	p.namespaces = informer.Lister()
	p.synced = append(p.synced, informer.Informer().HasSynced)
	p.SetReadyFunc(p.allSynced)
}

func (p *Plugin) allSynced() bool {
	for _, s := range p.synced {
		if !s() {
			return false
		}
	}
	return true
}

// ValidateInitialization requires the policy informer.
func (p *Plugin) ValidateInitialization() error {
	if len(p.synced) == 0 {
		return fmt.Errorf("%s admission plugin needs the Plinth informer factory", PluginName)
	}
	return nil
}

// SetPolicies replaces the policies the plugin applies.
func (p *Plugin) SetPolicies(policies []*v1b1.PlatformPolicy) { p.policies.Set(policies) }

// handles is true for the main workloads resource of score.dev.
func handles(a admission.Attributes) bool {
	return a.GetResource().GroupResource() == score.Resource("workloads") && a.GetSubresource() == ""
}

// matching is the policies that select the workload. It reads only the workload's namespace
// and labels, so it runs on the internal object: a workload no policy selects (the usual case)
// is never converted.
func (p *Plugin) matching(a admission.Attributes, w *score.Workload) ([]*policy.Compiled, error) {
	if !p.WaitForReady() {
		return nil, admission.NewForbidden(a, fmt.Errorf("not yet ready to handle request"))
	}
	var nsLabels labels.Set
	if p.namespaces != nil {
		if ns, err := p.namespaces.Get(w.Namespace); err == nil {
			nsLabels = ns.Labels
		}
	}
	return p.policies.Matching(w.Labels, nsLabels), nil
}

// versioned converts the request's Workload to the versioned API, which pkg/platformpolicy
// and pkg/score work on.
func versioned(internal *score.Workload) (*v1b1.Workload, error) {
	// The generated conversion needs no scheme; it shares maps and slices with internal, which
	// only Admit changes, and Admit converts the result back.
	w := &v1b1.Workload{}
	if err := v1b1.Convert_score_Workload_To_v1b1_Workload(internal, w, nil); err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	return w, nil
}

// Admit applies the matching policies' defaults and records them in an annotation.
func (p *Plugin) Admit(_ context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if !handles(a) {
		return nil
	}
	internal, ok := a.GetObject().(*score.Workload)
	if !ok {
		return nil
	}
	matching, err := p.matching(a, internal)
	if err != nil {
		return err
	}
	if len(matching) == 0 {
		delete(internal.Annotations, AppliedPoliciesAnnotation)
		return nil
	}
	w, err := versioned(internal)
	if err != nil {
		return err
	}
	// Only an inline document can declare resources the spec does not; an invalid one is
	// reported by validation, and defaults then use the spec alone.
	var resolved *scorespec.Workload
	if w.Spec.Source != nil && w.Spec.Source.Inline != nil {
		resolved, _ = scorespec.Merge(w)
	}
	applied := policy.ApplyDefaults(w, resolved, matching)
	if len(applied) > 0 {
		if w.Annotations == nil {
			w.Annotations = map[string]string{}
		}
		w.Annotations[AppliedPoliciesAnnotation] = strings.Join(applied, ",")
	} else {
		delete(w.Annotations, AppliedPoliciesAnnotation)
	}
	if err := v1b1.Convert_v1b1_Workload_To_score_Workload(w, internal, nil); err != nil {
		return apierrors.NewInternalError(err)
	}
	return nil
}

// Validate rejects a workload that breaks a matching policy's constraints: 403 Forbidden, the
// first violation as the message, every violation as a PolicyViolation cause.
func (p *Plugin) Validate(_ context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if !handles(a) {
		return nil
	}
	internal, ok := a.GetObject().(*score.Workload)
	if !ok {
		return nil
	}
	matching, err := p.matching(a, internal)
	if err != nil || len(matching) == 0 {
		return err
	}
	w, err := versioned(internal)
	if err != nil {
		return err
	}
	resolved, errs := scorespec.Merge(w)
	if len(errs) > 0 {
		// Strategy validation ran first and accepted the object; this is not expected.
		return apierrors.NewInvalid(score.Kind("Workload"), w.Name, errs)
	}
	facts := policy.NewFacts(w, resolved)
	var violations []policy.Violation
	for _, c := range matching {
		violations = append(violations, c.Violations(facts)...)
	}
	if len(violations) == 0 {
		return nil
	}
	return violationError(w, violations)
}

// violationError is 403 Forbidden in the form of every Kubernetes admission refusal
// ("workloads.score.dev "web" is forbidden: ..."), the first violation as the message and every
// violation as a PolicyViolation cause at its field path.
func violationError(w *v1b1.Workload, violations []policy.Violation) error {
	first := violations[0]
	err := apierrors.NewForbidden(score.Resource("workloads"), w.Name,
		fmt.Errorf("violates PlatformPolicy %q: %s.", first.Policy, first.Message))
	for _, v := range violations {
		err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{
			Type:    ReasonPolicyViolation,
			Field:   v.Field.String(),
			Message: fmt.Sprintf("PlatformPolicy %q: %s.", v.Policy, v.Message),
		})
	}
	return err
}
