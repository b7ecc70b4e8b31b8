package resourcebinding

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	corev1apply "k8s.io/client-go/applyconfigurations/core/v1"
	metav1apply "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"

	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
	"github.com/plinth-dev/plinth/pkg/errkind"
	"github.com/plinth-dev/plinth/pkg/provisioners"
	scorespec "github.com/plinth-dev/plinth/pkg/score"
)

// BindingLabel marks the objects a provisioner made for a binding with the binding's name.
const BindingLabel = "score.dev/resource-binding"

// RenderFailedError is a template provisioner whose templates refused the binding (a fail call,
// a template that cannot run on these inputs): retrying cannot help until the binding or the
// provisioner changes, so it is returned marked errkind.Stalled (renderFailed).
type RenderFailedError struct {
	// URI names the provisioner.
	URI string
	// Message is one neutral sentence for the binding's status, naming the provisioner.
	Message string
}

func (e *RenderFailedError) Error() string { return e.Message }

// renderFailed is the Stalled error of templates that refused the binding.
func renderFailed(uri, format string, args ...any) error {
	return errkind.Stalled(&RenderFailedError{URI: uri, Message: fmt.Sprintf(format, args...)})
}

// templateProvisioner provisions a binding with one score-k8s template provisioner: it renders
// the templates from the binding, its workload and the persisted state, stores the new state,
// applies the manifests in the binding's namespace (owned by the binding) and publishes the
// outputs, secret ones as Secret keys.
type templateProvisioner struct {
	env   Env
	state *stateStore
	entry *provisioners.Entry
}

func (t *templateProvisioner) Provision(ctx context.Context, b *v1b1.ResourceBinding) (Result, error) {
	spec := t.entry.Template.Spec()
	data, err := t.data(b, spec)
	if err != nil {
		return Result{}, err
	}
	var stored *corev1.Secret
	if data.State, stored, err = t.state.get(ctx, b); err != nil {
		return Result{}, err
	}
	var sharedVersion sharedVersion
	usesShared := spec.Shared != "" || mentions(spec, ".Shared")
	if usesShared {
		if data.Shared, sharedVersion, err = t.state.shared(ctx, b.Namespace); err != nil {
			return Result{}, err
		}
	}
	rendered, err := t.entry.Template.Render(data)
	var renderErr *provisioners.RenderError
	if errors.As(err, &renderErr) {
		return Result{}, renderFailed(spec.URI, "The provisioner %s failed in its %s template: %s",
			spec.URI, renderErr.Template, sentence(renderErr.Message))
	}
	if err != nil {
		return Result{}, err
	}
	outputs, err := provisioners.SplitMixedOutputs(rendered.Outputs)
	if err != nil {
		return Result{}, renderFailed(spec.URI, "The provisioner %s gave unusable outputs: %s", spec.URI, sentence(err.Error()))
	}
	// score-k8s's own amqp and mongodb write the password they keep in their state into a plain
	// output; here such an output is kept secret as a whole, like one that embeds a reference.
	for name, value := range outputs.Values {
		if holdsSecretOf(value, rendered.State) || holdsSecretOf(value, rendered.Shared) {
			delete(outputs.Values, name)
			outputs.Mixed[name] = []provisioners.Piece{{Text: value}}
		}
	}
	if err := checkManifests(b, rendered.Manifests); err != nil {
		return Result{}, renderFailed(spec.URI, "The provisioner %s %s", spec.URI, err.Error())
	}
	// Shared state, then state, then the manifests. The shared write is optimistic and fails
	// cleanly on a conflict, before a state derived from the losing version is kept; the state
	// precedes the manifests, which may carry a password it has just drawn, so that a crash
	// between the two never draws another one on the retry.
	if spec.Shared != "" && !equalJSON(data.Shared, rendered.Shared) {
		if err := t.state.putShared(ctx, b.Namespace, rendered.Shared, sharedVersion); err != nil {
			return Result{}, err
		}
	}
	if err := t.state.put(ctx, b, rendered.State, stored); err != nil {
		return Result{}, err
	}
	ready, err := t.apply(ctx, b, rendered.Manifests)
	if err != nil {
		return Result{}, err
	}
	if len(outputs.Mixed) > 0 {
		assembled, err := t.assemble(ctx, b, outputs.Mixed)
		if err != nil {
			return Result{}, err
		}
		ready = ready && assembled
		for name := range outputs.Mixed {
			outputs.Secrets[name] = provisioners.SecretRef{Name: OutputsSecretName(b.Name), Key: name}
		}
	}
	result := Result{Values: outputs.Values, Ready: ready, Message: "The resource is bound."}
	if len(outputs.Secrets) > 0 {
		result.Secrets = map[string]v1b1.SecretKeyReference{}
		for name, ref := range outputs.Secrets {
			result.Secrets[name] = v1b1.SecretKeyReference{Name: ref.Name, Key: ref.Key}
		}
	}
	if !ready {
		// Bound only when what the manifests run can be used, so a workload never starts
		// against a broker or database that is still coming up.
		result.Message = "The resource is being provisioned."
	}
	return result, nil
}

// OutputsSecretName names the Secret that holds a binding's outputs that embed secrets.
func OutputsSecretName(binding string) string { return binding + ".outputs" }

// assemble writes the outputs whose text embeds secret references (a connection string with
// the password in it) into a Secret of the binding's own, each under its output's name: such a
// value is a secret as a whole, and a Secret key is what containers and files can take it from.
// It reports false while a referenced Secret does not exist yet (the manifests may be creating
// it), so the binding waits.
func (t *templateProvisioner) assemble(ctx context.Context, b *v1b1.ResourceBinding, mixed map[string][]provisioners.Piece) (bool, error) {
	read := map[string]*corev1.Secret{}
	missing := false
	value := func(ref provisioners.SecretRef) ([]byte, error) {
		s, ok := read[ref.Name]
		if !ok {
			var err error
			// Live reads: the manifests have just applied these Secrets, which the cache
			// may not hold yet.
			s, err = t.env.Client.CoreV1().Secrets(b.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				missing = true
				return nil, nil
			}
			if err != nil {
				return nil, err
			}
			read[ref.Name] = s
		}
		v, ok := s.Data[ref.Key]
		if !ok {
			missing = true
		}
		return v, nil
	}
	data := map[string][]byte{}
	for name, pieces := range mixed {
		v, err := provisioners.Assemble(pieces, value)
		if err != nil {
			return false, err
		}
		data[name] = v
	}
	if missing {
		return false, nil
	}
	secret := corev1apply.Secret(OutputsSecretName(b.Name), b.Namespace).
		WithLabels(map[string]string{"app.kubernetes.io/managed-by": "plinth", BindingLabel: b.Name}).
		WithOwnerReferences(metav1apply.OwnerReference().WithAPIVersion(v1b1.SchemeGroupVersion.String()).WithKind("ResourceBinding").
			WithName(b.Name).WithUID(b.UID).WithController(true)).
		WithData(data)
	_, err := t.env.Client.CoreV1().Secrets(b.Namespace).Apply(ctx, secret, metav1.ApplyOptions{FieldManager: fieldManager, Force: true})
	return err == nil, err
}

// data is what the templates see, as score-k8s gives it, but for the persisted state (Provision
// reads it): the resource's uid parts, params and metadata, the source workload and the services
// of every workload in the namespace (Plinth's project).
func (t *templateProvisioner) data(b *v1b1.ResourceBinding, spec *v1b1.ProvisionerSpec) (provisioners.Data, error) {
	class := b.Spec.Class
	if class == "" {
		class = provisioners.DefaultClass
	}
	id := ResourceID(b)
	d := provisioners.Data{
		Guid: string(b.UID), Type: b.Spec.Type, Class: class, Id: id, Uid: b.Spec.Type + "." + class + "#" + id,
		SourceWorkload: b.Spec.WorkloadRef.Name, Namespace: b.Namespace,
		WorkloadMetadata: map[string]interface{}{"name": b.Spec.WorkloadRef.Name},
		Shared:           map[string]interface{}{},
	}
	var err error
	if b.Spec.Params != nil {
		if d.Params, err = b.Spec.Params.Object(); err != nil {
			return d, err
		}
	}
	if b.Spec.Metadata != nil {
		if d.Metadata, err = b.Spec.Metadata.Object(); err != nil {
			return d, err
		}
	}
	if t.env.Workloads != nil {
		if w, err := t.env.Workloads.Workloads(b.Namespace).Get(b.Spec.WorkloadRef.Name); err == nil {
			d.WorkloadMetadata = scorespec.Metadata(w)
		}
		if mentions(spec, ".WorkloadServices") {
			if d.WorkloadServices, err = t.services(b.Namespace); err != nil {
				return d, err
			}
		}
	}
	return d, nil
}

// services are the namespace's workloads and their service ports, keyed as score-k8s keys them:
// by name, and by port number where no name is that number. A workload's Service is named after
// it (the kubernetes runtime's rule).
func (t *templateProvisioner) services(namespace string) (map[string]provisioners.NetworkService, error) {
	workloads, err := t.env.Workloads.Workloads(namespace).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	out := make(map[string]provisioners.NetworkService, len(workloads))
	for _, w := range workloads {
		ns := provisioners.NetworkService{ServiceName: w.Name, Ports: map[string]provisioners.ServicePort{}}
		merged, errs := scorespec.Merge(w)
		if len(errs) == 0 && merged.Service != nil {
			names := make([]string, 0, len(merged.Service.Ports))
			for name := range merged.Service.Ports {
				names = append(names, name)
			}
			sort.Strings(names)
			for _, name := range names {
				p := merged.Service.Ports[name]
				sp := provisioners.ServicePort{Name: name, Port: int(p.Port), TargetPort: int(p.TargetPort), Protocol: p.Protocol}
				if sp.TargetPort == 0 {
					sp.TargetPort = sp.Port
				}
				if sp.Protocol == "" {
					sp.Protocol = "TCP"
				}
				ns.Ports[name] = sp
			}
			for _, name := range names {
				sp := ns.Ports[name]
				if _, taken := ns.Ports[strconv.Itoa(sp.Port)]; !taken {
					ns.Ports[strconv.Itoa(sp.Port)] = sp
				}
			}
		}
		out[w.Name] = ns
	}
	return out, nil
}

// apply server-side applies each manifest in the binding's namespace, owned by the binding, and
// reports whether every applied object is ready (ObjectReady). The apply response carries the
// object's current status, so no informer per kind is needed.
func (t *templateProvisioner) apply(ctx context.Context, b *v1b1.ResourceBinding, manifests []map[string]interface{}) (bool, error) {
	if len(manifests) == 0 {
		return true, nil
	}
	if t.env.Dynamic == nil || t.env.Mapper == nil {
		return false, errors.New("template manifests need a dynamic client")
	}
	allReady := true
	for _, m := range manifests {
		obj := &unstructured.Unstructured{Object: m}
		gvk := obj.GroupVersionKind()
		mapping, err := t.env.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			// The discovery cache may predate the kind; refresh it for the retry.
			if r, ok := t.env.Mapper.(interface{ Reset() }); ok {
				r.Reset()
			}
			return false, err
		}
		var resource dynamic.ResourceInterface = t.env.Dynamic.Resource(mapping.Resource)
		if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
			obj.SetNamespace(b.Namespace)
			resource = t.env.Dynamic.Resource(mapping.Resource).Namespace(b.Namespace)
		}
		// score-k8s's templates may give several resources one object (its s3 shares a MinIO
		// through .Shared). Each binding owns its own entry of the object's owners, applied under
		// a field manager of its own, so the entries add up and the object goes with the last
		// binding that uses it rather than with whichever applied last.
		owner := ownerRef(b)
		owner.Controller = nil
		if err := madeByABinding(ctx, b, resource, gvk.Kind, obj.GetName()); err != nil {
			return false, err
		}
		obj.SetOwnerReferences([]metav1.OwnerReference{owner})
		data, err := obj.MarshalJSON()
		if err != nil {
			return false, err
		}
		live, err := resource.Patch(ctx, obj.GetName(), types.ApplyPatchType, data,
			metav1.PatchOptions{FieldManager: fieldManager + "-" + string(b.UID), Force: ptr.To(true)})
		if err != nil {
			// The API's message may quote a field's value, which a template may have drawn from
			// its state: logs get the object and the reason only.
			return false, applyError(gvk.Kind, obj.GetName(), err)
		}
		ready, err := ObjectReady(live)
		if err != nil {
			return false, err
		}
		allReady = allReady && ready
	}
	return allReady, nil
}

// madeByABinding refuses an object of a template's manifest that exists and that no binding
// made. The apply is forced and adds the binding to the object's owners, so applying over an
// object someone else made would take it over, and the garbage collector would delete it with
// the binding. An object some binding of the namespace owns was applied by a template (several
// bindings may share one, as score-k8s's s3 shares a MinIO) and is applied again. Owner
// references name objects of the same namespace only, and a tenant does not see bindings'
// UIDs, so nobody makes an object look like a binding's by accident.
func madeByABinding(ctx context.Context, b *v1b1.ResourceBinding, resource dynamic.ResourceInterface, kind, name string) error {
	live, err := resource.Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return applyError(kind, name, err)
	}
	for _, ref := range live.GetOwnerReferences() {
		if ref.APIVersion == v1b1.SchemeGroupVersion.String() && ref.Kind == "ResourceBinding" {
			return nil
		}
	}
	return foreignObject(kind, name, b)
}

// ResourceID is the resource's Score id: its shared id, else workload.resource.
func ResourceID(b *v1b1.ResourceBinding) string {
	if b.Spec.ID != "" {
		return b.Spec.ID
	}
	return b.Spec.WorkloadRef.Name + "." + b.Spec.ResourceKey
}

// mentions reports whether any template reads the given data field, so the data that costs
// reads (the namespace's workloads, the shared state) is gathered only for templates that use it.
func mentions(spec *v1b1.ProvisionerSpec, field string) bool {
	for _, text := range []string{spec.Init, spec.State, spec.Shared, spec.Outputs, spec.Manifests} {
		if strings.Contains(text, field) {
			return true
		}
	}
	return false
}

// equalJSON compares two decoded JSON-like values by their encodings.
func equalJSON(a, b interface{}) bool {
	ea, errA := json.Marshal(a)
	eb, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(ea, eb)
}

// sentence ends a message with a full stop.
func sentence(s string) string {
	s = strings.TrimSpace(s)
	if s == "" || strings.HasSuffix(s, ".") {
		return s
	}
	return s + "."
}
