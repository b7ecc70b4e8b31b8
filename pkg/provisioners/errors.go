package provisioners

import (
	"fmt"
	"regexp"
	"strings"
)

// RenderError is a provisioner's templates refusing to render a resource: a fail call, an
// execution error, or a result that is not the YAML the template must produce. It never holds
// rendered text, which may carry generated passwords.
type RenderError struct {
	// Template names the template: init, state, shared, outputs or manifests.
	Template string
	// Message says what went wrong: for a fail call, the provisioner author's sentence as
	// written.
	Message string
}

func (e *RenderError) Error() string {
	return fmt.Sprintf("the %s template failed: %s", e.Template, e.Message)
}

// execError is the shape of text/template's execution errors: where (template, line, column and
// the action, all from the template's source) and what.
var execError = regexp.MustCompile(`(?s)^template: [^:]*:([0-9]+):([0-9]+): executing "[^"]*" at <(.*)>: (.*)$`)

// safeExecDetails begin the execution errors that describe the problem in names and types
// only. Others print the value at hand ("range can't iterate over ...") or carry a function's
// own error, which may quote its argument (toDate's, for one), and are cut short.
var safeExecDetails = []string{
	"can't evaluate field ", "nil pointer evaluating ", "wrong number of args for ", "wrong type for value; ",
	"invalid value; expected ", "undefined variable", "map has no entry for key ", "nil data; no entry for key ",
	"dereference of nil pointer ", "cannot assign nil to ", "exceeded maximum template depth",
	"can't handle ", "expected ", "can't print ",
}

// execErrorMessage describes an execution error by where it happened and what went wrong,
// without a value the template was working on.
func execErrorMessage(err error) string {
	m := execError.FindStringSubmatch(err.Error())
	if m == nil {
		return "the template cannot run on these values"
	}
	where := fmt.Sprintf("line %s, column %s, at <%s>", m[1], m[2], m[3])
	detail := m[4]
	if name, _, ok := strings.Cut(strings.TrimPrefix(detail, "error calling "), ":"); ok && strings.HasPrefix(detail, "error calling ") {
		return fmt.Sprintf("%s: the function %s failed", where, name)
	}
	for _, prefix := range safeExecDetails {
		if strings.HasPrefix(detail, prefix) {
			return where + ": " + detail
		}
	}
	return where + ": the template cannot run on these values"
}

// yamlSyntaxError is the shape of yaml.v3's syntax errors, which name a line and a problem in
// words of their own. Other errors (an invalid map key, say) may quote the rendered text.
var yamlSyntaxError = regexp.MustCompile(`^yaml: (line [0-9]+: [A-Za-z ,':]+)$`)

// yamlErrorMessage describes why a template's result is not YAML, with its line when that can
// be said without quoting the result.
func yamlErrorMessage(err error) string {
	if m := yamlSyntaxError.FindStringSubmatch(err.Error()); m != nil {
		return "the result is not valid YAML: " + m[1]
	}
	return "the result is not valid YAML"
}
