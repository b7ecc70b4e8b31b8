package resourcebinding

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"text/template"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
)

// TemplateConfig is the provisioners file (--provisioners-config): resource types a platform
// team adds, or redefines, without writing code.
//
//	provisioners:
//	- type: amqp
//	  secretOutputs:             # generated once, kept in a Secret named after the binding
//	    username: app
//	    password: "{{ randomPassword }}"
//	  outputs:                   # plain outputs
//	    host: "{{ .Name }}.{{ .Namespace }}.svc"
//	    port: "5672"
//	  manifests: |               # applied in the workload's namespace, owned by the binding
//	    apiVersion: apps/v1
//	    kind: StatefulSet
//	    metadata: {name: "{{ .Name }}"}
//	    ...
//
// Templates are Go text/template with .Name (the binding, also the Secret's name), .Namespace,
// .Workload, .Resource (its name in the workload), .Type, .Class, .ID and .Params (a map), and
// the function randomPassword.
type TemplateConfig struct {
	Provisioners []TemplateProvisioner `json:"provisioners"`
}

// TemplateProvisioner defines one resource type.
type TemplateProvisioner struct {
	Type          string            `json:"type"`
	Outputs       map[string]string `json:"outputs,omitempty"`
	SecretOutputs map[string]string `json:"secretOutputs,omitempty"`
	Manifests     string            `json:"manifests,omitempty"`
}

// LoadTemplates reads a provisioners file.
func LoadTemplates(path string, env Env) (map[string]Provisioner, error) {
	defs, err := ReadTemplates(path)
	if err != nil {
		return nil, err
	}
	out := map[string]Provisioner{}
	for _, p := range defs {
		out[p.Type] = &templateProvisioner{env: env, def: p}
	}
	return out, nil
}

// ReadTemplates reads and checks a provisioners file without binding it to a cluster: types
// are named and unique, and every template parses. plinth-controller calls it while it
// validates its flags, so a broken file is reported with the other bad flags, before anything
// starts.
func ReadTemplates(path string) ([]TemplateProvisioner, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var cfg TemplateConfig
	if err := yaml.UnmarshalStrict(data, &cfg); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	seen := map[string]bool{}
	for i, p := range cfg.Provisioners {
		if p.Type == "" {
			return nil, fmt.Errorf("%s: provisioners[%d].type is required", path, i)
		}
		if seen[p.Type] {
			return nil, fmt.Errorf("%s: provisioners[%d]: type %q is defined twice", path, i, p.Type)
		}
		seen[p.Type] = true
		texts := map[string]string{"manifests": p.Manifests}
		for k, v := range p.Outputs {
			texts["outputs."+k] = v
		}
		for k, v := range p.SecretOutputs {
			texts["secretOutputs."+k] = v
		}
		for field, text := range texts {
			if _, err := parse(field, text); err != nil {
				return nil, fmt.Errorf("%s: provisioners[%d].%s: %w", path, i, field, err)
			}
		}
	}
	return cfg.Provisioners, nil
}

type templateProvisioner struct {
	env Env
	def TemplateProvisioner
}

func (t *templateProvisioner) Provision(ctx context.Context, b *v1b1.ResourceBinding) (Result, error) {
	result := Result{Values: map[string]string{}, Ready: true, Message: "The resource is bound."}
	if len(t.def.SecretOutputs) > 0 {
		result.SecretName = b.Name
		if _, err := t.env.Secrets.Secrets(b.Namespace).Get(b.Name); apierrors.IsNotFound(err) {
			data := map[string]string{}
			for k, tmpl := range t.def.SecretOutputs {
				v, err := t.render(k, b, tmpl)
				if err != nil {
					return Result{}, err
				}
				data[k] = v
			}
			secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: b.Name, Namespace: b.Namespace,
				Labels: map[string]string{"app.kubernetes.io/managed-by": "plinth"}, OwnerReferences: []metav1.OwnerReference{ownerRef(b)}},
				StringData: data}
			if _, err := t.env.Client.CoreV1().Secrets(b.Namespace).Create(ctx, secret, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				return Result{}, err
			}
		} else if err != nil {
			return Result{}, err
		}
	}
	for k, tmpl := range t.def.Outputs {
		v, err := t.render(k, b, tmpl)
		if err != nil {
			return Result{}, err
		}
		result.Values[k] = v
	}
	if t.def.Manifests == "" {
		return result, nil
	}
	rendered, err := t.render("manifests", b, t.def.Manifests)
	if err != nil {
		return Result{}, err
	}
	ready, err := t.apply(ctx, b, rendered)
	if err != nil {
		return Result{}, err
	}
	if !ready {
		// Bound only when what the manifests run can be used, so a workload never starts
		// against a broker or database that is still coming up.
		result.Ready, result.Message = false, "The resource is being provisioned."
	}
	return result, nil
}

// apply server-side applies each document, in the binding's namespace and owned by it, and
// reports whether every applied object is ready (ObjectReady). The apply response carries the
// object's current status, so no informer per kind is needed.
func (t *templateProvisioner) apply(ctx context.Context, b *v1b1.ResourceBinding, manifests string) (bool, error) {
	if t.env.Dynamic == nil || t.env.Mapper == nil {
		return false, errors.New("template manifests need a dynamic client")
	}
	allReady := true
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewBufferString(manifests), 4096)
	for {
		var obj unstructured.Unstructured
		if err := decoder.Decode(&obj.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return allReady, nil
			}
			return false, err
		}
		if len(obj.Object) == 0 {
			continue
		}
		mapping, err := t.env.Mapper.RESTMapping(obj.GroupVersionKind().GroupKind(), obj.GroupVersionKind().Version)
		if err != nil {
			// The discovery cache may predate the kind; refresh it for the retry.
			if r, ok := t.env.Mapper.(interface{ Reset() }); ok {
				r.Reset()
			}
			return false, err
		}
		obj.SetNamespace(b.Namespace)
		obj.SetOwnerReferences([]metav1.OwnerReference{ownerRef(b)})
		data, err := obj.MarshalJSON()
		if err != nil {
			return false, err
		}
		var resource dynamic.ResourceInterface = t.env.Dynamic.Resource(mapping.Resource)
		if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
			resource = t.env.Dynamic.Resource(mapping.Resource).Namespace(b.Namespace)
		}
		live, err := resource.Patch(ctx, obj.GetName(), types.ApplyPatchType, data,
			metav1.PatchOptions{FieldManager: "plinth-resolver", Force: ptr.To(true)})
		if err != nil {
			return false, err
		}
		ready, err := ObjectReady(live)
		if err != nil {
			return false, err
		}
		allReady = allReady && ready
	}
}

func parse(name, text string) (*template.Template, error) {
	return template.New(name).Option("missingkey=error").Funcs(template.FuncMap{"randomPassword": randomPassword}).Parse(text)
}

func (t *templateProvisioner) render(name string, b *v1b1.ResourceBinding, text string) (string, error) {
	tmpl, err := parse(name, text)
	if err != nil {
		return "", err
	}
	params := map[string]interface{}{}
	if b.Spec.Params != nil {
		if p, err := b.Spec.Params.Object(); err == nil && p != nil {
			params = p
		}
	}
	var out bytes.Buffer
	err = tmpl.Execute(&out, map[string]interface{}{
		"Name": b.Name, "Namespace": b.Namespace, "Workload": b.Spec.WorkloadRef.Name, "Resource": b.Spec.ResourceKey,
		"Type": b.Spec.Type, "Class": b.Spec.Class, "ID": b.Spec.ID, "Params": params,
	})
	return out.String(), err
}
