package provisioners

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
)

// ParseFile reads a score-k8s provisioners file: a YAML list of provisioner entries, each
// checked with Validate and, as score-k8s does, refused when it has a field the format does not
// know. The first bad entry fails the whole file, with an error that names the entry's index and
// the field, for example "[3].uri: ...". An empty list is a valid file.
//
// A cmd:// entry is not an error of the file but is left out, and returned in skipped with the
// sentence saying why (plinth-controller runs no commands): score-k8s's own files carry cmd://
// examples next to their template provisioners, and those files must load unchanged.
func ParseFile(data []byte) (specs []v1b1.ProvisionerSpec, skipped []error, err error) {
	raw, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, nil, fmt.Errorf("the provisioners file is not valid YAML: %w", err)
	}
	var entries []json.RawMessage
	if err := json.Unmarshal(raw, &entries); err != nil {
		return nil, nil, errors.New("the provisioners file is not a YAML list of provisioners")
	}
	specs = make([]v1b1.ProvisionerSpec, 0, len(entries))
	for i, entry := range entries {
		spec, err := parseEntry(entry, i)
		var command *CommandProvisionerError
		switch {
		case errors.As(err, &command):
			skipped = append(skipped, err)
		case err != nil:
			return nil, nil, err
		default:
			specs = append(specs, spec)
		}
	}
	return specs, skipped, nil
}

// CommandProvisionerError is a cmd:// entry of a provisioners file, which plinth-controller
// leaves out: it runs no commands.
type CommandProvisionerError struct {
	// Index is the entry's index in the file.
	Index int
	// Message is the sentence saying why, with the field.
	Message string
}

func (e *CommandProvisionerError) Error() string { return fmt.Sprintf("[%d].%s", e.Index, e.Message) }

// parseEntry decodes and validates the entry at index i.
func parseEntry(entry json.RawMessage, i int) (v1b1.ProvisionerSpec, error) {
	var spec v1b1.ProvisionerSpec
	if bytes.Equal(bytes.TrimSpace(entry), []byte("null")) || len(entry) == 0 || entry[0] != '{' {
		return spec, fmt.Errorf("[%d]: the entry is not a YAML map", i)
	}
	// A cmd:// entry has fields of its own (args) that a template entry does not: say why it
	// is refused before complaining about them.
	var head struct {
		URI string `json:"uri"`
	}
	if err := json.Unmarshal(entry, &head); err == nil {
		if u, err := url.Parse(head.URI); err == nil && u.Scheme == schemeCommand {
			errs := validateURI(head.URI, field.NewPath("uri"))
			return spec, &CommandProvisionerError{Index: i, Message: errs[0].Error()}
		}
	}
	dec := json.NewDecoder(bytes.NewReader(entry))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&spec); err != nil {
		return spec, fmt.Errorf("[%d]: %s", i, decodeErrorMessage(err))
	}
	if errs := Validate(&spec, nil); len(errs) > 0 {
		parts := make([]string, len(errs))
		for j, e := range errs {
			parts[j] = fmt.Sprintf("[%d].%s", i, e.Error())
		}
		return spec, errors.New(strings.Join(parts, ", "))
	}
	return spec, nil
}

// decodeErrorMessage turns encoding/json's errors into what the file's author needs: the field
// that is unknown or of the wrong type.
func decodeErrorMessage(err error) string {
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) && typeErr.Field != "" {
		return fmt.Sprintf("the field %s must be a %s, not a %s", typeErr.Field, typeErr.Type, typeErr.Value)
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return fmt.Sprintf("the field %s is not a field of a template provisioner", name)
	}
	return err.Error()
}
