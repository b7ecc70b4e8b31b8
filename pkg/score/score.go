// Package score turns a Workload into the Score workload it describes and checks it: the inline
// document against the official Score v1b1 JSON schema (from score-go), its name, its agreement
// with the Workload's own sections, and every ${...} placeholder. Pure functions on the versioned
// API (score.dev/v1b1), so the controller needs no scheme: admission and validation, which hold
// internal objects, convert them with the generated conversion functions before calling.
package score

import (
	"bytes"
	"encoding/json"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v5"
	scoreschema "github.com/score-spec/score-go/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/plinth-dev/plinth/pkg/apis/common"
	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
)

var (
	compiledSchema     *jsonschema.Schema
	compiledSchemaErr  error
	compiledSchemaOnce sync.Once
)

// schema is score-go's v1b1 schema, compiled once: score-go's own Validate compiles it on every
// call, which would cost milliseconds per request.
func schema() (*jsonschema.Schema, error) {
	compiledSchemaOnce.Do(func() {
		compiledSchema, compiledSchemaErr = jsonschema.CompileString("score-v1b1.json", scoreschema.ScoreSchemaV1b1)
	})
	return compiledSchema, compiledSchemaErr
}

// ParseInline decodes an inline Score document, applies score-go's upgrade transforms (for
// example legacy file lists) and validates it against the schema. Errors point below fldPath.
func ParseInline(raw []byte, fldPath *field.Path) (map[string]interface{}, field.ErrorList) {
	var doc map[string]interface{}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil || doc == nil {
		return nil, field.ErrorList{field.Invalid(fldPath, "<document>", "must be a Score document (a JSON object)")}
	}
	if _, err := scoreschema.ApplyCommonUpgradeTransforms(doc); err != nil {
		return nil, field.ErrorList{field.Invalid(fldPath, "<document>", err.Error())}
	}
	s, err := schema()
	if err != nil {
		return nil, field.ErrorList{field.InternalError(fldPath, err)}
	}
	if err := s.Validate(doc); err != nil {
		return nil, schemaErrors(err, fldPath)
	}
	return doc, nil
}

// schemaErrors flattens a jsonschema error into one field error per failing location,
// keeping the most specific messages.
func schemaErrors(err error, fldPath *field.Path) field.ErrorList {
	verr, ok := err.(*jsonschema.ValidationError)
	if !ok {
		return field.ErrorList{field.Invalid(fldPath, "<document>", err.Error())}
	}
	var errs field.ErrorList
	seen := map[string]bool{}
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		p := pointerPath(fldPath, e.InstanceLocation)
		key := p.String() + "\x00" + e.Message
		if seen[key] {
			return
		}
		seen[key] = true
		errs = append(errs, field.Invalid(p, "<score>", "does not match the Score v1b1 schema: "+e.Message))
	}
	walk(verr)
	return errs
}

// pointerPath turns a JSON pointer (/containers/web/image) into a field path below base.
func pointerPath(base *field.Path, pointer string) *field.Path {
	p := base
	for _, part := range strings.Split(strings.TrimPrefix(pointer, "/"), "/") {
		if part == "" {
			continue
		}
		part = strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")
		p = p.Child(part)
	}
	return p
}

// Inline is the part of an inline Score document the platform uses, in API types.
type Inline struct {
	Name       string
	Containers map[string]v1b1.Container
	Resources  map[string]v1b1.ResourceSpec
	Service    *v1b1.ServiceSpec
}

// FromDocument converts a schema-valid Score document to API types.
func FromDocument(doc map[string]interface{}) (*Inline, error) {
	// The schema guarantees the shape; a JSON round trip into the wire shapes does the rest.
	var wire struct {
		Metadata   map[string]interface{} `json:"metadata"`
		Containers map[string]struct {
			Image          string                   `json:"image"`
			Command        []string                 `json:"command"`
			Args           []string                 `json:"args"`
			Variables      map[string]string        `json:"variables"`
			Files          map[string]fileWire      `json:"files"`
			Volumes        map[string]volumeWire    `json:"volumes"`
			Resources      *v1b1.ContainerResources `json:"resources"`
			LivenessProbe  *probeWire               `json:"livenessProbe"`
			ReadinessProbe *probeWire               `json:"readinessProbe"`
		} `json:"containers"`
		Resources map[string]struct {
			Type     string                 `json:"type"`
			Class    string                 `json:"class"`
			ID       string                 `json:"id"`
			Params   map[string]interface{} `json:"params"`
			Metadata map[string]interface{} `json:"metadata"`
		} `json:"resources"`
		Service *struct {
			Ports map[string]v1b1.ServicePort `json:"ports"`
		} `json:"service"`
	}
	raw, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(raw, &wire); err != nil {
		return nil, err
	}
	out := &Inline{Containers: map[string]v1b1.Container{}, Resources: map[string]v1b1.ResourceSpec{}}
	out.Name, _ = wire.Metadata["name"].(string)
	for name, c := range wire.Containers {
		container := v1b1.Container{Image: c.Image, Command: c.Command, Args: c.Args, Variables: c.Variables, Resources: c.Resources,
			LivenessProbe: c.LivenessProbe.toAPI(), ReadinessProbe: c.ReadinessProbe.toAPI()}
		for _, target := range sets.List(sets.KeySet(c.Files)) {
			f := c.Files[target]
			container.Files = append(container.Files, v1b1.ContainerFile{Target: target, Mode: f.Mode, Content: f.Content,
				BinaryContent: f.BinaryContent, Source: f.Source, NoExpand: f.NoExpand})
		}
		for _, target := range sets.List(sets.KeySet(c.Volumes)) {
			v := c.Volumes[target]
			container.Volumes = append(container.Volumes, v1b1.ContainerVolume{Target: target, Source: v.Source, Path: v.Path, ReadOnly: v.ReadOnly})
		}
		out.Containers[name] = container
	}
	for name, r := range wire.Resources {
		res := v1b1.ResourceSpec{Type: r.Type, Class: r.Class, ID: r.ID}
		if r.Params != nil {
			params, err := json.Marshal(r.Params)
			if err != nil {
				return nil, err
			}
			res.Params = &common.RawObject{Raw: params}
		}
		out.Resources[name] = res
	}
	if wire.Service != nil {
		out.Service = &v1b1.ServiceSpec{Ports: wire.Service.Ports}
	}
	return out, nil
}

type fileWire struct {
	Mode          string  `json:"mode"`
	Content       *string `json:"content"`
	BinaryContent *string `json:"binaryContent"`
	Source        *string `json:"source"`
	NoExpand      bool    `json:"noExpand"`
}

type volumeWire struct {
	Source   string `json:"source"`
	Path     string `json:"path"`
	ReadOnly bool   `json:"readOnly"`
}

type probeWire struct {
	Exec    *v1b1.ExecProbe `json:"exec"`
	HTTPGet *struct {
		Scheme      string            `json:"scheme"`
		Host        string            `json:"host"`
		Path        string            `json:"path"`
		Port        int32             `json:"port"`
		HTTPHeaders []v1b1.HTTPHeader `json:"httpHeaders"`
	} `json:"httpGet"`
}

func (p *probeWire) toAPI() *v1b1.ContainerProbe {
	if p == nil {
		return nil
	}
	out := &v1b1.ContainerProbe{Exec: p.Exec}
	if h := p.HTTPGet; h != nil {
		out.HTTPGet = &v1b1.HTTPGetProbe{Scheme: h.Scheme, Host: h.Host, Path: h.Path, Port: h.Port, HTTPHeaders: h.HTTPHeaders}
	}
	return out
}
