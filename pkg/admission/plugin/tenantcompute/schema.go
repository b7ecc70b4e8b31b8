package tenantcompute

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/util/validation/field"
	openapierrors "k8s.io/kube-openapi/pkg/validation/errors"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"k8s.io/kube-openapi/pkg/validation/strfmt"
	"k8s.io/kube-openapi/pkg/validation/validate"
)

// schemas compiles each provider's configSchema once and keeps it until the provider
// publishes another: one entry per provider name, replaced when the schema's bytes change.
type schemas struct {
	mu     sync.Mutex
	byName map[string]*compiled
}

// compiled is one provider's schema and its validator, or why it cannot be used.
type compiled struct {
	raw       []byte
	validator *validate.SchemaValidator
	err       error
}

func (s *schemas) get(provider string, raw []byte) *compiled {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.byName[provider]; ok && bytes.Equal(c.raw, raw) {
		return c
	}
	c := compile(raw)
	if s.byName == nil {
		s.byName = map[string]*compiled{}
	}
	s.byName[provider] = c
	return c
}

// compile parses a JSON Schema into a validator. kube-openapi's validator panics on $ref (it
// resolves none), so a schema with one is refused here rather than mid-request.
func compile(raw []byte) *compiled {
	c := &compiled{raw: bytes.Clone(raw)}
	schema := &spec.Schema{}
	if err := json.Unmarshal(raw, schema); err != nil {
		c.err = fmt.Errorf("it is not a JSON Schema: %w", err)
		return c
	}
	if hasRef(schema) {
		c.err = errors.New("it uses $ref, which is not supported")
		return c
	}
	c.validator = validate.NewSchemaValidator(schema, nil, "", strfmt.Default)
	return c
}

// hasRef reports whether s or any schema it validates with has a $ref.
func hasRef(s *spec.Schema) bool {
	if s == nil {
		return false
	}
	if s.Ref.String() != "" {
		return true
	}
	var nested []*spec.Schema
	if s.Items != nil {
		nested = append(nested, s.Items.Schema)
		for i := range s.Items.Schemas {
			nested = append(nested, &s.Items.Schemas[i])
		}
	}
	for _, list := range [][]spec.Schema{s.AllOf, s.OneOf, s.AnyOf} {
		for i := range list {
			nested = append(nested, &list[i])
		}
	}
	for _, m := range []map[string]spec.Schema{s.Properties, s.PatternProperties} {
		for k := range m {
			v := m[k]
			nested = append(nested, &v)
		}
	}
	for _, b := range []*spec.SchemaOrBool{s.AdditionalProperties, s.AdditionalItems} {
		if b != nil {
			nested = append(nested, b.Schema)
		}
	}
	for k := range s.Dependencies {
		nested = append(nested, s.Dependencies[k].Schema)
	}
	nested = append(nested, s.Not)
	for _, n := range nested {
		if hasRef(n) {
			return true
		}
	}
	return false
}

// validateConfig checks a providerConfig (decoded JSON; an absent one is an empty object)
// against the schema and reports each failure at its path under fldPath, the way
// kube-apiserver reports a custom resource that breaks its CRD's schema.
func (c *compiled) validateConfig(fldPath *field.Path, config interface{}) field.ErrorList {
	result := c.validator.Validate(config)
	var errs field.ErrorList
	for _, err := range result.Errors {
		v, ok := err.(*openapierrors.Validation)
		if !ok {
			errs = append(errs, field.Invalid(fldPath, "", err.Error()))
			continue
		}
		path := fldPath
		if name := strings.TrimPrefix(v.Name, "."); name != "" {
			path = fldPath.Child(name)
		}
		errs = append(errs, toFieldError(path, v))
	}
	return errs
}

func toFieldError(path *field.Path, v *openapierrors.Validation) *field.Error {
	switch v.Code() {
	case openapierrors.RequiredFailCode:
		return field.Required(path, "")
	case openapierrors.EnumFailCode:
		values := make([]string, 0, len(v.Values))
		for _, allowed := range v.Values {
			if s, ok := allowed.(string); ok {
				values = append(values, s)
			} else {
				j, _ := json.Marshal(allowed)
				values = append(values, string(j))
			}
		}
		return field.NotSupported(path, v.Value, values)
	case openapierrors.UnallowedPropertyCode:
		// The validator names the object; the property itself is the field at fault.
		if key, ok := v.Value.(string); ok {
			return field.Forbidden(path.Child(key), "the provider's configSchema allows no such field")
		}
	}
	value := v.Value
	if value == nil {
		value = ""
	}
	return field.Invalid(path, value, message(v))
}

// message is the validator's message without the path and location it starts with
// ("replicas in body must be of type integer: ..."): the field error names the path already.
func message(v *openapierrors.Validation) string {
	msg := v.Error()
	for _, prefix := range []string{v.Name + " in " + v.In + " ", v.Name + " "} {
		if v.Name != "" && strings.HasPrefix(msg, prefix) {
			return strings.TrimPrefix(msg, prefix)
		}
	}
	return msg
}
