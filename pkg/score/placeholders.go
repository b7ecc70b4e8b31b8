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

// MaxPlaceholders bounds the ${...} references of one workload, all places together. Real
// workloads use tens; each reference is checked on admission and resolved on every reconcile,
// so a document with tens of thousands would cost the API server and the controller for
// nothing. Over the bound, the workload is refused with one error, not one per reference.
const MaxPlaceholders = 1000

// placeholderChecker checks the placeholders of one workload against the resources it
// declares, counting them against MaxPlaceholders.
type placeholderChecker struct {
	declared sets.Set[string]
	count    int
	// tooMany is set, at the place the count passed MaxPlaceholders; nothing more is checked
	// then.
	tooMany *field.Error
}

// checkString finds every placeholder in s with score-go's substituter (which honours $$
// escapes) and reports each bad one at fldPath. The error quotes the placeholder, not s: a
// string with many bad placeholders would otherwise repeat itself once per error.
func (c *placeholderChecker) checkString(s string, fldPath *field.Path) field.ErrorList {
	if c.tooMany != nil || !strings.Contains(s, "$") {
		return nil
	}
	var errs field.ErrorList
	_, _ = framework.SubstituteString(s, func(ref string) (string, error) {
		c.count++
		switch {
		case c.tooMany != nil:
		case c.count > MaxPlaceholders:
			c.tooMany = field.Invalid(fldPath, field.OmitValueType{},
				fmt.Sprintf("brings the workload over %d placeholders, the most a workload may use", MaxPlaceholders))
		default:
			if err := CheckPlaceholder(ref, c.declared); err != nil {
				errs = append(errs, field.Invalid(fldPath, field.OmitValueType{}, err.Error()))
			}
		}
		return "", nil
	})
	return errs
}

// checkPlaceholders checks variables, expandable file contents, volume sources and resource
// params, the places Score expands. Over MaxPlaceholders, the one error is the count's.
func (w *Workload) checkPlaceholders(spec *field.Path) field.ErrorList {
	c := &placeholderChecker{declared: sets.KeySet(w.Resources)}
	var errs field.ErrorList
	for _, name := range sets.List(sets.KeySet(w.Containers)) {
		ctr := w.Containers[name]
		base := w.path(spec, "containers", name)
		for _, key := range sets.List(sets.KeySet(ctr.Variables)) {
			errs = append(errs, c.checkString(ctr.Variables[key], base.Child("variables", key))...)
		}
		for i, f := range ctr.Files {
			if f.Content != nil && !f.NoExpand {
				errs = append(errs, c.checkString(*f.Content, base.Child("files").Index(i).Child("content"))...)
			}
		}
		for i, v := range ctr.Volumes {
			errs = append(errs, c.checkString(v.Source, base.Child("volumes").Index(i).Child("source"))...)
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
		errs = append(errs, c.checkValue(params, base)...)
	}
	if c.tooMany != nil {
		// Only the count's error: the others were found before it and would be a partial list.
		return field.ErrorList{c.tooMany}
	}
	return errs
}

func (c *placeholderChecker) checkValue(v interface{}, fldPath *field.Path) field.ErrorList {
	switch t := v.(type) {
	case string:
		return c.checkString(t, fldPath)
	case map[string]interface{}:
		var errs field.ErrorList
		for _, k := range sets.List(sets.KeySet(t)) {
			errs = append(errs, c.checkValue(t[k], fldPath.Key(k))...)
		}
		return errs
	case []interface{}:
		var errs field.ErrorList
		for i, e := range t {
			errs = append(errs, c.checkValue(e, fldPath.Index(i))...)
		}
		return errs
	}
	return nil
}
