package render

import (
	"errors"
	"net/url"
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

// urlInText is a URL as messages quote it: a scheme, "://" and everything up to a space or a
// quote.
var urlInText = regexp.MustCompile(`[a-zA-Z][a-zA-Z0-9+.-]*://[^\s"'<>]+`)

// RedactURLs rewrites every URL in s to what may be shown: an http or https URL to its scheme
// and host only (a token may sit in its user, path or query: signed download URLs, private
// repositories), any other (oci://) without user, query or fragment.
func RedactURLs(s string) string {
	return urlInText.ReplaceAllStringFunc(s, func(m string) string {
		// Punctuation after a URL is the sentence's.
		trimmed := strings.TrimRight(m, ".,:;)]")
		tail := m[len(trimmed):]
		u, err := url.Parse(trimmed)
		if err != nil || u.Host == "" {
			scheme, _, _ := strings.Cut(trimmed, "://")
			return scheme + "://…" + tail
		}
		if u.Scheme == "http" || u.Scheme == "https" {
			return u.Scheme + "://" + u.Host + tail
		}
		return (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}).String() + tail
	})
}

// Redact returns err with every URL in its text redacted by RedactURLs; errors.Is and
// errors.As see the same errors as in err, and an *Error stays one.
func Redact(err error) error {
	if err == nil {
		return nil
	}
	msg := RedactURLs(err.Error())
	if msg == err.Error() {
		return err
	}
	if e, ok := err.(*Error); ok {
		redacted := *e
		redacted.Message = RedactURLs(e.Message)
		return &redacted
	}
	return &redactedError{msg: msg, err: err}
}

// redactedError is an error with its text redacted.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }
