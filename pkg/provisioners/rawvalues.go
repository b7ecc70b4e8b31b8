package provisioners

import (
	"bytes"
	"strings"
)

// A template is text that becomes YAML, and some of the values it writes come from people other
// than the provisioner's author: the resource's state and the shared state live in Secrets of
// the namespace, which its editors can change, and params and metadata come from the workload.
// Such a value written into the YAML as it is, unquoted, is read as YAML: one that spans lines
// can add list items or keys, that is objects or fields to the manifests plinth-controller
// applies with its own identity. Templates write them with toJson or quote (the built-in ones
// do); a template that writes one spanning lines as it is fails instead of being read. Values
// transformed on the way (trunc, lower) are not recognised: quoting them is the template's job.

// outsideValues are the strings of a render's data that come from outside the template and span
// lines, trailing line breaks left out (a certificate's last one makes no line).
type outsideValues [][]byte

// add collects the strings of v, a value decoded from YAML or JSON, that span lines.
func (o *outsideValues) add(v interface{}) {
	switch x := v.(type) {
	case string:
		trimmed := strings.TrimRight(x, " \t\r\n")
		if strings.ContainsAny(trimmed, "\r\n") {
			*o = append(*o, []byte(trimmed))
		}
	case map[string]interface{}:
		for k, e := range x {
			o.add(k)
			o.add(e)
		}
	case []interface{}:
		for _, e := range x {
			o.add(e)
		}
	}
}

// writtenAsIs reports whether out, a template's output, holds one of the values as it is. A
// quoted value has its line breaks escaped, an indented or encoded one (toYaml, nindent, b64enc)
// has them followed by other text, so only a value written unquoted is found.
func (o outsideValues) writtenAsIs(out []byte) bool {
	for _, v := range o {
		if bytes.Contains(out, v) {
			return true
		}
	}
	return false
}

// errWrittenAsIs is the RenderError message of a template that writes such a value unquoted.
const errWrittenAsIs = "it writes a value that spans lines, from the resource's state, params or metadata, into its YAML unquoted; templates write such values with toJson or quote"
