package render

import (
	"errors"
	"regexp"
	"strconv"
	"strings"
)

// Error is a problem with a pack's content, as opposed to a failure to fetch it: a template that
// fails, a chart or chart version that is not there, a kustomization that fails, an object
// without apiVersion, kind or name, an object rendered twice, a render over the limits. Rendering
// the same content again fails the same way, so a controller retries only when the pack changes.
type Error struct {
	// Template is the chart template the error is in, as Helm names it
	// (mychart/templates/deploy.yaml); empty when the error is not in a template.
	Template string
	// Line is the line in Template; 0 when unknown.
	Line int
	// Message is the reason.
	Message string
}

// Error reads "template <name> line <n>: <reason>", or the reason alone outside templates.
func (e *Error) Error() string {
	switch {
	case e.Template != "" && e.Line > 0:
		return "template " + e.Template + " line " + strconv.Itoa(e.Line) + ": " + e.Message
	case e.Template != "":
		return "template " + e.Template + ": " + e.Message
	}
	return e.Message
}

// IsContentError says whether err is, or wraps, an *Error: a problem with the pack's content
// that only a change of the pack can fix. Any other error from Render is a fetch failure worth
// retrying with backoff.
func IsContentError(err error) bool {
	var e *Error
	return errors.As(err, &e)
}

var (
	// Go's text/template errors: template: <name>:<line>[:<col>]: <reason>.
	rawTemplateError = regexp.MustCompile(`^template: (.+?):(\d+)(?::\d+)?: (.*)$`)
	// Helm's rewritten forms: parse error at (<name>:<line>): <reason> and execution error at
	// (<name>:<line>:<col>): <reason>.
	helmTemplateError = regexp.MustCompile(`^(?:parse|execution) error at \((.+?):(\d+)(?::\d+)?\): (.*)$`)
	// Helm's forms without a line: parse error in (<name>): <reason>.
	helmFileError = regexp.MustCompile(`^(?:parse|execution) error in \((.+?)\): (.*)$`)
	// The part of an execution error that repeats the template's name.
	executing = regexp.MustCompile(`^executing "[^"]*" `)
)

// templateError turns an error from Helm's engine into an *Error naming the template and line
// where Helm's message has them.
func templateError(err error) *Error {
	msg := oneLine(err.Error())
	if m := helmTemplateError.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[2])
		return &Error{Template: m[1], Line: line, Message: m[3]}
	}
	if m := rawTemplateError.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[2])
		return &Error{Template: m[1], Line: line, Message: executing.ReplaceAllString(m[3], "")}
	}
	if m := helmFileError.FindStringSubmatch(msg); m != nil {
		return &Error{Template: m[1], Message: m[2]}
	}
	return &Error{Message: msg}
}

// oneLine folds a library's multi-line message (kustomize quotes configurations, Helm lists
// schema violations) into one line for a condition message.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
