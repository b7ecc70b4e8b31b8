package provisioners

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
)

// A secret reference is how a template says "this output is a key of a Secret" without the
// secret's value: score-k8s's newest encoding, the Secret's name and the key joined by "_"
// between two emoji markers. The name comes first and Kubernetes names hold no "_", so the first
// "_" splits the two even when the key has one.
const (
	secretRefPrefix = "🔐💬"
	secretRefSuffix = "💬🔐"
)

// SecretRef is a key of a Secret in the resource's namespace.
type SecretRef struct {
	// Name is the Secret's name.
	Name string
	// Key is the key in the Secret's data.
	Key string
}

// EncodeSecretRef is the template function encodeSecretRef: the reference to key of the Secret
// name, encoded as score-k8s encodes it, so that a template may also write one by hand.
func EncodeSecretRef(name, key string) string {
	return secretRefPrefix + name + "_" + key + secretRefSuffix
}

// ContainsSecretRef reports whether s holds the start of a secret reference anywhere, so a caller
// can make sure no reference reaches a place that takes plain values only.
func ContainsSecretRef(s string) bool {
	return strings.Contains(s, secretRefPrefix)
}

// parseSecretRef reads s, which holds a secret reference, as exactly one reference and nothing
// else, or says why it is not.
func parseSecretRef(s string) (SecretRef, error) {
	inner, found := strings.CutPrefix(s, secretRefPrefix)
	if !found {
		return SecretRef{}, errMixedSecretRef
	}
	inner, found = strings.CutSuffix(inner, secretRefSuffix)
	if !found || strings.Contains(inner, secretRefPrefix) || strings.Contains(inner, secretRefSuffix) {
		return SecretRef{}, errMixedSecretRef
	}
	name, key, found := strings.Cut(inner, "_")
	if !found || name == "" || key == "" {
		return SecretRef{}, errMalformedSecretRef
	}
	return SecretRef{Name: name, Key: key}, nil
}

var (
	errMixedSecretRef     = errors.New("mixes a secret reference with other text, which only a whole value may be")
	errMalformedSecretRef = errors.New("holds a secret reference without a Secret name and key")
	errNestedSecretRef    = errors.New("holds a secret reference inside a map or list, which only a whole value may be")
)

// SplitOutputs sorts a provisioner's outputs into plain values and secret references. An output
// whose whole value is one secret reference is a key of a Secret; a string is a value as it is;
// any other value is written as JSON (5432 as "5432", a map or list as compact JSON), as Score
// writes a non-string output into a string. An output that holds a secret reference anywhere
// else, mixed with text or inside a map or list, is an error naming the output: its secret could
// not be kept out of a plain value.
func SplitOutputs(outputs map[string]interface{}) (values map[string]string, secrets map[string]SecretRef, err error) {
	split, err := splitOutputs(outputs, false)
	if err != nil {
		return nil, nil, err
	}
	return split.Values, split.Secrets, nil
}

// Outputs are a provisioner's outputs sorted by how they may be used.
type Outputs struct {
	// Values are the plain outputs.
	Values map[string]string
	// Secrets are the outputs that are one Secret key each.
	Secrets map[string]SecretRef
	// Mixed are the outputs whose text embeds secret references (a connection string with a
	// password in it, as score-k8s's mssql writes): their text and references in order. Such
	// a value is a secret as a whole; the caller assembles it where secrets are kept.
	Mixed map[string][]Piece
}

// Piece is a stretch of literal text, or one secret reference, of a mixed output.
type Piece struct {
	// Text is literal text; empty for a reference.
	Text string
	// Ref is the reference, or nil for text.
	Ref *SecretRef
}

// SplitMixedOutputs is SplitOutputs that also accepts text mixed with secret references, as
// score-k8s does in container variables: those outputs are returned as pieces.
func SplitMixedOutputs(outputs map[string]interface{}) (Outputs, error) {
	return splitOutputs(outputs, true)
}

// Assemble writes a mixed output's text with each reference replaced by the key's value.
func Assemble(pieces []Piece, value func(SecretRef) ([]byte, error)) ([]byte, error) {
	var out []byte
	for _, p := range pieces {
		if p.Ref == nil {
			out = append(out, p.Text...)
			continue
		}
		v, err := value(*p.Ref)
		if err != nil {
			return nil, err
		}
		out = append(out, v...)
	}
	return out, nil
}

func splitOutputs(outputs map[string]interface{}, allowMixed bool) (Outputs, error) {
	split := Outputs{Values: make(map[string]string, len(outputs)), Secrets: map[string]SecretRef{}, Mixed: map[string][]Piece{}}
	for _, name := range sortedKeys(outputs) {
		switch v := outputs[name].(type) {
		case string:
			if !ContainsSecretRef(v) {
				split.Values[name] = v
				continue
			}
			ref, err := parseSecretRef(v)
			if errors.Is(err, errMixedSecretRef) && allowMixed {
				pieces, err := parsePieces(v)
				if err != nil {
					return Outputs{}, fmt.Errorf("the output %s %w", name, err)
				}
				split.Mixed[name] = pieces
				continue
			}
			if err != nil {
				return Outputs{}, fmt.Errorf("the output %s %w", name, err)
			}
			split.Secrets[name] = ref
		default:
			if holdsSecretRef(v) {
				return Outputs{}, fmt.Errorf("the output %s %w", name, errNestedSecretRef)
			}
			encoded, err := json.Marshal(v)
			if err != nil {
				return Outputs{}, fmt.Errorf("the output %s cannot be written as JSON", name)
			}
			split.Values[name] = string(encoded)
		}
	}
	return split, nil
}

// parsePieces cuts s into text and references.
func parsePieces(s string) ([]Piece, error) {
	var pieces []Piece
	for s != "" {
		start := strings.Index(s, secretRefPrefix)
		if start < 0 {
			pieces = append(pieces, Piece{Text: s})
			break
		}
		if start > 0 {
			pieces = append(pieces, Piece{Text: s[:start]})
		}
		end := strings.Index(s[start:], secretRefSuffix)
		if end < 0 {
			return nil, errMalformedSecretRef
		}
		end += start + len(secretRefSuffix)
		ref, err := parseSecretRef(s[start:end])
		if err != nil {
			return nil, errMalformedSecretRef
		}
		pieces = append(pieces, Piece{Ref: &ref})
		s = s[end:]
	}
	return pieces, nil
}

// holdsSecretRef reports whether any string in v, a value decoded from YAML, holds a reference.
func holdsSecretRef(v interface{}) bool {
	switch x := v.(type) {
	case string:
		return ContainsSecretRef(x)
	case map[string]interface{}:
		for k, e := range x {
			if holdsSecretRef(k) || holdsSecretRef(e) {
				return true
			}
		}
	case []interface{}:
		for _, e := range x {
			if holdsSecretRef(e) {
				return true
			}
		}
	}
	return false
}

// sortedKeys are m's keys in order, so that the first bad output reported is always the same.
func sortedKeys(m map[string]interface{}) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
