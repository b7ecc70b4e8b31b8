package provisioners

import (
	"text/template"

	"github.com/Masterminds/sprig/v3"
)

// funcs is the function map every template is parsed with: sprig's, as score-k8s gives it, plus
// encodeSecretRef, with the changes that the controller's place requires. Building sprig's map
// allocates a few hundred closures, so it is made once for the process.
var funcs = newFuncMap()

func newFuncMap() template.FuncMap {
	m := template.FuncMap(sprig.FuncMap())
	// env and expandenv would let anyone who may write a provisioner read plinth-controller's
	// environment into outputs; score-k8s runs as its user's own process, the controller does
	// not. Without them, a template that calls them fails to parse, so Validate refuses it.
	delete(m, "env")
	delete(m, "expandenv")
	// getHostByName resolves names from the controller's network, blocking a worker meanwhile:
	// sprig lists it with env and expandenv as the functions that are not hermetic.
	delete(m, "getHostByName")
	// fail keeps sprig's signature but returns an error Render can tell from any other, so the
	// provisioner author's sentence reaches the user as written (other errors are cut short,
	// as they may quote values).
	m["fail"] = func(msg string) (string, error) { return "", &failError{msg: msg} }
	// required is the other function whose error is the author's sentence; same semantics as
	// sprig's: nil or an empty string fails.
	m["required"] = func(msg string, val interface{}) (interface{}, error) {
		if s, isString := val.(string); val == nil || (isString && s == "") {
			return val, &failError{msg: msg}
		}
		return val, nil
	}
	m["encodeSecretRef"] = EncodeSecretRef
	return m
}

// failError is the error of a template's fail call.
type failError struct{ msg string }

func (e *failError) Error() string { return e.msg }

// parseTemplate parses one template of an entry as score-k8s does (surrounding space trimmed),
// named after its field so that parse and execution errors say which template is wrong. It
// returns nil for an empty template, which renders to nothing.
func parseTemplate(name, text string) (*template.Template, error) {
	text = trimSpace(text)
	if text == "" {
		return nil, nil
	}
	return template.New(name).Funcs(funcs).Parse(text)
}
