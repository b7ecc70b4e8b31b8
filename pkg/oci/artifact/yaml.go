package artifact

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// encodeYAML writes a JSON-shaped object (what a manifest decodes to: maps, lists, strings,
// int64 and float64 numbers, booleans, null) as a block-style YAML document.
//
// It exists for speed: a general YAML library walks every value by reflection and, through
// sigs.k8s.io/yaml, encodes and parses it as JSON first, which made packaging 200 manifests
// cost more than pushing them. The output is read by YAML 1.1 parsers (kubectl, sigs.k8s.io/yaml)
// and YAML 1.2 ones (kustomize) alike, because it is conservative: a string is written plain only
// when it cannot be read as anything but that string, and double-quoted with escapes both
// understand otherwise.
func encodeYAML(obj map[string]interface{}) ([]byte, error) {
	var b bytes.Buffer
	b.Grow(1024)
	if len(obj) == 0 {
		b.WriteString("{}\n")
		return b.Bytes(), nil
	}
	if err := writeMap(&b, obj, 0, false); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// writeMap writes a non-empty map's entries at indent, in key order. inline says the first
// entry continues a line already begun (after "- ").
func writeMap(b *bytes.Buffer, m map[string]interface{}, indent int, inline bool) error {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for i, k := range keys {
		if i > 0 || !inline {
			writeIndent(b, indent)
		}
		if key := formatString(k); utf8.RuneCountInString(key) <= maxSimpleKey {
			b.WriteString(key)
		} else {
			// YAML reads a key written as is ("simple") only up to 1024 characters; a longer
			// one needs the explicit form, "? key" and its value on the next line after ":".
			b.WriteString("? ")
			b.WriteString(key)
			b.WriteByte('\n')
			writeIndent(b, indent)
		}
		b.WriteByte(':')
		if err := writeValue(b, m[k], indent, true); err != nil {
			return fmt.Errorf("%s: %w", k, err)
		}
	}
	return nil
}

// writeValue writes the value of a map entry (afterKey) or of a list item, the line begun.
// Nested maps go on the following lines indented by two; lists of a map entry stay at the
// entry's indent, as kubectl writes them.
func writeValue(b *bytes.Buffer, v interface{}, indent int, afterKey bool) error {
	switch v := v.(type) {
	case map[string]interface{}:
		if len(v) == 0 {
			b.WriteString(" {}\n")
			return nil
		}
		if !afterKey {
			b.WriteByte(' ')
			return writeMap(b, v, indent+2, true)
		}
		b.WriteByte('\n')
		return writeMap(b, v, indent+2, false)
	case []interface{}:
		if len(v) == 0 {
			b.WriteString(" []\n")
			return nil
		}
		itemIndent := indent
		if !afterKey {
			// A list in a list: its items start on the same line, "- - a".
			b.WriteByte(' ')
			return writeList(b, v, indent+2, true)
		}
		b.WriteByte('\n')
		return writeList(b, v, itemIndent, false)
	default:
		b.WriteByte(' ')
		if err := writeScalar(b, v); err != nil {
			return err
		}
		b.WriteByte('\n')
		return nil
	}
}

// writeList writes a non-empty list's items at indent; inline as for writeMap.
func writeList(b *bytes.Buffer, l []interface{}, indent int, inline bool) error {
	for i, item := range l {
		if i > 0 || !inline {
			writeIndent(b, indent)
		}
		b.WriteByte('-')
		if err := writeValue(b, item, indent, false); err != nil {
			return fmt.Errorf("[%d]: %w", i, err)
		}
	}
	return nil
}

func writeIndent(b *bytes.Buffer, n int) {
	for i := 0; i < n; i++ {
		b.WriteByte(' ')
	}
}

// writeScalar writes a string, number, boolean or null.
func writeScalar(b *bytes.Buffer, v interface{}) error {
	switch v := v.(type) {
	case nil:
		b.WriteString("null")
	case string:
		writeString(b, v)
	case bool:
		b.WriteString(strconv.FormatBool(v))
	case int64:
		b.WriteString(strconv.FormatInt(v, 10))
	case int:
		b.WriteString(strconv.Itoa(v))
	case int32:
		b.WriteString(strconv.FormatInt(int64(v), 10))
	case float64:
		writeFloat(b, v)
	case json.Number:
		b.WriteString(v.String())
	default:
		// Not what a decoded manifest holds; JSON is YAML too, as a flow value.
		data, err := json.Marshal(v)
		if err != nil {
			return err
		}
		b.Write(data)
	}
	return nil
}

// writeFloat writes a float as encoding/json does (so 1e+21 rather than 1000000000000000000000),
// and the values JSON lacks in YAML's words.
func writeFloat(b *bytes.Buffer, f float64) {
	switch {
	case math.IsNaN(f):
		b.WriteString(".nan")
	case math.IsInf(f, 1):
		b.WriteString(".inf")
	case math.IsInf(f, -1):
		b.WriteString("-.inf")
	default:
		abs := math.Abs(f)
		format := byte('f')
		if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
			format = 'e'
		}
		s := strconv.FormatFloat(f, format, -1, 64)
		if format == 'e' {
			// 1e-07 → 1e-7, as encoding/json writes it.
			if n := len(s); n >= 4 && s[n-4] == 'e' && s[n-3] == '-' && s[n-2] == '0' {
				s = s[:n-2] + s[n-1:]
			}
		}
		b.WriteString(s)
	}
}

// validUTF8 replaces each invalid byte with U+FFFD, as encoding/json does and so
// sigs.k8s.io/yaml: Go would quote it as \xNN, which YAML reads as another character.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var sb strings.Builder
	for _, r := range s { // an invalid byte ranges as one utf8.RuneError
		sb.WriteRune(r)
	}
	return sb.String()
}

// plain matches strings that YAML reads back as the same string when unquoted: a letter or
// underscore first (so never a number, an indicator or .inf), then letters, digits and
// _ . / : @ - (no space, so never "key: value" or a comment), not ending in ':'.
var plain = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_./:@-]*$`)

// reserved are the plain words YAML 1.1 or 1.2 read as booleans or null.
var reserved = map[string]bool{
	"y": true, "yes": true, "n": true, "no": true, "true": true, "false": true,
	"on": true, "off": true, "null": true,
}

// writeString writes a string plain when that is unambiguous, else double-quoted. Go's quoting
// of a valid UTF-8 string uses only escapes YAML's double-quoted style has (\" \\ \a \b \f \n
// \r \t \v \uXXXX \UXXXXXXXX); strings decoded from JSON are valid UTF-8.
func writeString(b *bytes.Buffer, s string) {
	b.WriteString(formatString(s))
}

// formatString is s as writeString writes it.
func formatString(s string) string {
	s = validUTF8(s)
	if plain.MatchString(s) && !strings.HasSuffix(s, ":") && !reserved[strings.ToLower(s)] {
		return s
	}
	return strconv.Quote(s)
}

// maxSimpleKey is the longest key, in characters as written, that writeMap writes as a simple
// key: YAML parsers stop looking for a simple key's ':' after 1024 characters.
const maxSimpleKey = 1000
