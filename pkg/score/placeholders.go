package score

import (
	"fmt"
	"strings"

	"github.com/score-spec/score-go/framework"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// CheckPlaceholder reports what is wrong with one ${...} reference, or nil. References are
// ${metadata.KEY...} or ${resources.NAME[.OUTPUT...]} with NAME declared; anything else must be
// escaped as $${...}.
func CheckPlaceholder(ref string, declared sets.Set[string]) error {
	parts := framework.SplitRefParts(ref)
	switch parts[0] {
	case "metadata":
		if len(parts) < 2 || parts[1] == "" {
			return fmt.Errorf("${%s} needs a metadata key, as in ${metadata.name}", ref)
		}
	case "resources":
		if len(parts) < 2 || parts[1] == "" {
			return fmt.Errorf("${%s} needs a resource name, as in ${resources.db.host}", ref)
		}
		if !declared.Has(parts[1]) {
			return fmt.Errorf("${%s} refers to resource %q, which the workload does not declare", ref, parts[1])
		}
	default:
		return fmt.Errorf("${%s} has an unknown root %q: use metadata or resources, or write $$ to escape the $", ref, parts[0])
	}
	for _, p := range parts[1:] {
		if p == "" {
			return fmt.Errorf("${%s} has an empty element", ref)
		}
	}
	return nil
}

// checkString finds every placeholder in s with score-go's substituter (which honours $$
// escapes) and reports each bad one at fldPath.
func checkString(s string, declared sets.Set[string], fldPath *field.Path) field.ErrorList {
	if !strings.Contains(s, "$") {
		return nil
	}
	var errs field.ErrorList
	_, _ = framework.SubstituteString(s, func(ref string) (string, error) {
		if err := CheckPlaceholder(ref, declared); err != nil {
			errs = append(errs, field.Invalid(fldPath, s, err.Error()))
		}
		return "", nil
	})
	return errs
}

// checkPlaceholders checks variables, expandable file contents, volume sources and resource
// params, the places Score expands.
func (w *Workload) checkPlaceholders(spec *field.Path) field.ErrorList {
	declared := sets.KeySet(w.Resources)
	var errs field.ErrorList
	for _, name := range sets.List(sets.KeySet(w.Containers)) {
		c := w.Containers[name]
		base := w.path(spec, "containers", name)
		for _, key := range sets.List(sets.KeySet(c.Variables)) {
			errs = append(errs, checkString(c.Variables[key], declared, base.Child("variables", key))...)
		}
		for i, f := range c.Files {
			if f.Content != nil && !f.NoExpand {
				errs = append(errs, checkString(*f.Content, declared, base.Child("files").Index(i).Child("content"))...)
			}
		}
		for i, v := range c.Volumes {
			errs = append(errs, checkString(v.Source, declared, base.Child("volumes").Index(i).Child("source"))...)
		}
	}
	for _, name := range sets.List(sets.KeySet(w.Resources)) {
		r := w.Resources[name]
		if r.Params == nil || len(r.Params.Raw) == 0 {
			continue
		}
		params, err := r.Params.Object()
		if err != nil {
			continue // the API validation reports params that are not an object
		}
		base := w.path(spec, "resources", name).Child("params")
		errs = append(errs, checkValue(params, declared, base)...)
	}
	return errs
}

func checkValue(v interface{}, declared sets.Set[string], fldPath *field.Path) field.ErrorList {
	switch t := v.(type) {
	case string:
		return checkString(t, declared, fldPath)
	case map[string]interface{}:
		var errs field.ErrorList
		for _, k := range sets.List(sets.KeySet(t)) {
			errs = append(errs, checkValue(t[k], declared, fldPath.Key(k))...)
		}
		return errs
	case []interface{}:
		var errs field.ErrorList
		for i, e := range t {
			errs = append(errs, checkValue(e, declared, fldPath.Index(i))...)
		}
		return errs
	}
	return nil
}
