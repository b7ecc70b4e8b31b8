package provisioners

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"text/template"

	"go.yaml.in/yaml/v3"

	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
)

// Template is a provisioner entry compiled once: its templates parsed, ready to render for any
// number of resources, from any number of goroutines.
type Template struct {
	spec                                   v1b1.ProvisionerSpec
	init, state, shared, outputs, manifest *template.Template
}

// Compile validates a provisioner entry and parses its templates. A caller keeps the Template for
// as long as the entry does not change: parsing is most of what rendering would otherwise cost.
func Compile(spec v1b1.ProvisionerSpec) (*Template, error) {
	if errs := Validate(&spec, nil); len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	t := &Template{spec: *spec.DeepCopy()}
	var err error
	// Validate has parsed each template once already; these cannot fail.
	for _, p := range []struct {
		name, text string
		dst        **template.Template
	}{
		{"init", spec.Init, &t.init}, {"state", spec.State, &t.state}, {"shared", spec.Shared, &t.shared},
		{"outputs", spec.Outputs, &t.outputs}, {"manifests", spec.Manifests, &t.manifest},
	} {
		if *p.dst, err = parseTemplate(p.name, p.text); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// Spec is the entry the Template was compiled from. It is the Template's own copy: read it, do
// not change it.
func (t *Template) Spec() *v1b1.ProvisionerSpec { return &t.spec }

// Result is what rendering a provisioner gives for one resource. Its maps may share values with
// the Data it was rendered from: treat both as read-only.
type Result struct {
	// State is the resource's new state, to persist in place of the old one: a provisioner
	// without a state template wipes it, as in score-k8s.
	State map[string]interface{}
	// Shared is the whole new shared state: the one rendered from, with the shared template's
	// result merged as a JSON merge patch.
	Shared map[string]interface{}
	// Outputs are the resource's outputs; SplitOutputs tells secret references from values.
	Outputs map[string]interface{}
	// Manifests are the Kubernetes objects to apply.
	Manifests []map[string]interface{}
}

// Render runs the templates for one resource in score-k8s's order, each seeing the results of
// those before it: init (read as .Init), state (the new .State), shared (merged into .Shared),
// outputs, and manifests. A template that is empty, or renders to nothing but space, gives an
// empty result. data is not changed.
func (t *Template) Render(data Data) (*Result, error) {
	buf := bufPool.Get().(*bytes.Buffer)
	defer bufPool.Put(buf)

	var err error
	d := &data
	r := &run{buf: buf}
	for _, v := range []map[string]interface{}{d.State, d.Shared, d.Params, d.Metadata, d.WorkloadMetadata} {
		r.outside.add(v)
	}
	// .Init is empty while init renders, as in score-k8s.
	d.Init = nil
	if d.Init, err = r.renderMap(t.init, d); err != nil {
		return nil, err
	}
	state, err := r.renderMap(t.state, d)
	if err != nil {
		return nil, err
	}
	d.State = state
	// The new state is the old one as the state template keeps it, or the template's own:
	// either way, what the later templates write of it is held to the same rule.
	r.outside.add(state)
	patch, err := r.renderMap(t.shared, d)
	if err != nil {
		return nil, err
	}
	d.Shared = mergePatch(d.Shared, patch)
	r.outside.add(patch)
	outputs, err := r.renderMap(t.outputs, d)
	if err != nil {
		return nil, err
	}
	manifests, err := r.renderManifests(t.manifest, d)
	if err != nil {
		return nil, err
	}
	return &Result{State: state, Shared: d.Shared, Outputs: outputs, Manifests: manifests}, nil
}

var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// run is one Render: its buffer, and the values from outside the templates that no template may
// write unquoted.
type run struct {
	buf     *bytes.Buffer
	outside outsideValues
}

// execute runs one template and decodes its YAML; nil when the template is empty or renders to
// nothing but space.
func (r *run) execute(tmpl *template.Template, d *Data) (interface{}, error) {
	if tmpl == nil {
		return nil, nil
	}
	buf := r.buf
	buf.Reset()
	if err := tmpl.Execute(buf, d); err != nil {
		var fail *failError
		if errors.As(err, &fail) {
			return nil, &RenderError{Template: tmpl.Name(), Message: fail.msg}
		}
		return nil, &RenderError{Template: tmpl.Name(), Message: execErrorMessage(err)}
	}
	if len(bytes.TrimSpace(buf.Bytes())) == 0 {
		return nil, nil
	}
	if r.outside.writtenAsIs(buf.Bytes()) {
		return nil, &RenderError{Template: tmpl.Name(), Message: errWrittenAsIs}
	}
	var out interface{}
	if err := yaml.Unmarshal(buf.Bytes(), &out); err != nil {
		return nil, &RenderError{Template: tmpl.Name(), Message: yamlErrorMessage(err)}
	}
	return normalize(out), nil
}

// renderMap renders a template that must produce a YAML map (init, state, shared, outputs); an
// empty result is an empty map.
func (r *run) renderMap(tmpl *template.Template, d *Data) (map[string]interface{}, error) {
	v, err := r.execute(tmpl, d)
	if err != nil {
		return nil, err
	}
	switch m := v.(type) {
	case nil:
		return map[string]interface{}{}, nil
	case map[string]interface{}:
		return m, nil
	default:
		return nil, &RenderError{Template: tmpl.Name(), Message: "the result is not a YAML map"}
	}
}

// renderManifests renders the manifests template, which must produce a YAML list of objects.
// Each object needs apiVersion, kind and metadata.name, which applying it takes; whether its
// fields fit its kind is the API server's to say when the object is applied, which is strict
// about unknown fields.
func (r *run) renderManifests(tmpl *template.Template, d *Data) ([]map[string]interface{}, error) {
	v, err := r.execute(tmpl, d)
	if err != nil {
		return nil, err
	}
	if v == nil {
		return []map[string]interface{}{}, nil
	}
	list, ok := v.([]interface{})
	if !ok {
		return nil, &RenderError{Template: tmpl.Name(), Message: "the result is not a YAML list of Kubernetes objects"}
	}
	out := make([]map[string]interface{}, 0, len(list))
	for i, item := range list {
		m, ok := item.(map[string]interface{})
		if !ok {
			return nil, &RenderError{Template: tmpl.Name(), Message: fmt.Sprintf("item %d of the list is not a YAML map", i)}
		}
		for _, f := range []string{"apiVersion", "kind"} {
			if s, _ := m[f].(string); s == "" {
				return nil, &RenderError{Template: tmpl.Name(), Message: fmt.Sprintf("item %d of the list has no %s", i, f)}
			}
		}
		meta, _ := m["metadata"].(map[string]interface{})
		if name, _ := meta["name"].(string); name == "" {
			return nil, &RenderError{Template: tmpl.Name(), Message: fmt.Sprintf("item %d of the list has no metadata.name", i)}
		}
		out = append(out, m)
	}
	return out, nil
}
