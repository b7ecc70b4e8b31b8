package common

import (
	"bytes"
	"encoding/json"
	"errors"

	openapicommon "k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// RawObject is a JSON object kept verbatim: free-form parts of an API such as an inline Score
// document or a resource's type-specific parameters. The server stores the bytes as received
// (after JSON normalisation by the decoder) and never interprets them in the registry; the
// consumers (admission, controllers) parse them. Its OpenAPI schema is an object that preserves
// unknown fields, so kubectl explain, validation and server-side apply treat it as opaque.
type RawObject struct {
	// Raw is the JSON encoding of the object.
	Raw []byte `json:"-"`
}

// MarshalJSON writes the raw bytes, or null for an empty value.
func (r RawObject) MarshalJSON() ([]byte, error) {
	if len(r.Raw) == 0 {
		return []byte("null"), nil
	}
	return r.Raw, nil
}

// UnmarshalJSON keeps a copy of the bytes; null becomes an empty value.
func (r *RawObject) UnmarshalJSON(data []byte) error {
	if r == nil {
		return errors.New("common.RawObject: UnmarshalJSON on nil pointer")
	}
	if bytes.Equal(bytes.TrimSpace(data), []byte("null")) {
		r.Raw = nil
		return nil
	}
	r.Raw = append(r.Raw[:0], data...)
	return nil
}

// IsObject reports whether the value holds a JSON object ({...}).
func (r RawObject) IsObject() bool {
	trimmed := bytes.TrimSpace(r.Raw)
	return len(trimmed) > 0 && trimmed[0] == '{' && json.Valid(trimmed)
}

// Object decodes the value into a map. An empty value yields a nil map.
func (r RawObject) Object() (map[string]interface{}, error) {
	if len(r.Raw) == 0 {
		return nil, nil
	}
	var out map[string]interface{}
	if err := json.Unmarshal(r.Raw, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// NewRawObject encodes v (normally a map) as a RawObject.
func NewRawObject(v interface{}) (RawObject, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return RawObject{}, err
	}
	return RawObject{Raw: raw}, nil
}

// OpenAPIDefinition describes RawObject to kube-openapi: an object whose fields are not pruned
// or typed, which is what structured-merge-diff needs to treat it as an atomic-free, untyped map.
func (RawObject) OpenAPIDefinition() openapicommon.OpenAPIDefinition {
	return openapicommon.OpenAPIDefinition{
		Schema: spec.Schema{
			SchemaProps: spec.SchemaProps{
				Description: "A free-form JSON object.",
				Type:        []string{"object"},
			},
			VendorExtensible: spec.VendorExtensible{
				Extensions: spec.Extensions{"x-kubernetes-preserve-unknown-fields": true},
			},
		},
	}
}
