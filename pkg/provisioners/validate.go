package provisioners

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
)

// The only scheme Plinth serves, and the one it refuses by name because score-k8s files carry it.
const (
	schemeTemplate = "template"
	schemeCommand  = "cmd"
)

// typePattern is what Score's schema allows as a resource type (and a class): a provisioner for
// anything else could never match a resource.
var typePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9-]{0,61}[A-Za-z0-9]$`)

// templateFields are an entry's templates, in the order they render.
func templateFields(spec *v1b1.ProvisionerSpec) []struct{ name, text string } {
	return []struct{ name, text string }{
		{"init", spec.Init}, {"state", spec.State}, {"shared", spec.Shared},
		{"outputs", spec.Outputs}, {"manifests", spec.Manifests},
	}
}

// Validate checks one provisioner entry: a template:// uri (cmd:// and other schemes are
// refused), a type and a class as Score spells them, a non-empty id when one is set, templates
// that parse with the functions Render offers, and expected_outputs and supported_params without
// empty or repeated names. Errors carry parse errors' text, never anything rendered.
func Validate(spec *v1b1.ProvisionerSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, validateURI(spec.URI, fldPath.Child("uri"))...)
	switch {
	case spec.Type == "":
		errs = append(errs, field.Required(fldPath.Child("type"), "the resource type the provisioner provides is required"))
	case !typePattern.MatchString(spec.Type):
		errs = append(errs, field.Invalid(fldPath.Child("type"), spec.Type,
			"a resource type is 2 to 63 letters, digits and '-', starting and ending with a letter or digit"))
	}
	if spec.Class != nil && !typePattern.MatchString(*spec.Class) {
		errs = append(errs, field.Invalid(fldPath.Child("class"), *spec.Class,
			"a resource class is 2 to 63 letters, digits and '-', starting and ending with a letter or digit; leave it unset to match any class"))
	}
	if spec.ID != nil && strings.TrimSpace(*spec.ID) == "" {
		errs = append(errs, field.Invalid(fldPath.Child("id"), *spec.ID, "the id must not be empty; leave it unset to match any resource"))
	}
	for _, t := range templateFields(spec) {
		if _, err := parseTemplate(t.name, t.text); err != nil {
			errs = append(errs, field.Invalid(fldPath.Child(t.name), field.OmitValueType{}, fmt.Sprintf("the template does not parse: %v", err)))
		}
	}
	errs = append(errs, validateNames(spec.ExpectedOutputs, fldPath.Child("expected_outputs"))...)
	errs = append(errs, validateNames(spec.SupportedParams, fldPath.Child("supported_params"))...)
	return errs
}

func validateURI(uri string, fldPath *field.Path) field.ErrorList {
	if uri == "" {
		return field.ErrorList{field.Required(fldPath, "the provisioner's uri is required, for example template://example/postgres")}
	}
	u, err := url.Parse(uri)
	if err != nil {
		return field.ErrorList{field.Invalid(fldPath, uri, "the uri does not parse")}
	}
	switch u.Scheme {
	case schemeTemplate:
		return nil
	case schemeCommand:
		// score-k8s runs a cmd:// provisioner as a program on its user's machine; the
		// controller runs no programs on anyone's behalf.
		return field.ErrorList{field.Invalid(fldPath, uri,
			"cmd:// provisioners are not supported because plinth-controller runs no commands; use a template:// provisioner")}
	case "":
		return field.ErrorList{field.Invalid(fldPath, uri, "the uri has no scheme; only template:// provisioners are supported")}
	default:
		return field.ErrorList{field.Invalid(fldPath, uri, fmt.Sprintf("the scheme %s:// is not supported; only template:// provisioners are supported", u.Scheme))}
	}
}

// validateNames checks a list of output or param names.
func validateNames(names []string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := make(map[string]bool, len(names))
	for i, n := range names {
		switch {
		case strings.TrimSpace(n) == "":
			errs = append(errs, field.Invalid(fldPath.Index(i), n, "a name must not be empty"))
		case seen[n]:
			errs = append(errs, field.Duplicate(fldPath.Index(i), n))
		}
		seen[n] = true
	}
	return errs
}

// trimSpace is strings.TrimSpace, named for where score-k8s trims a template.
func trimSpace(s string) string { return strings.TrimSpace(s) }
