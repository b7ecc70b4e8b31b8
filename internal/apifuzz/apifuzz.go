// Package apifuzz is the harness of the decode-and-validate fuzz targets of the API groups: it
// decodes arbitrary bytes the way plinth-apiserver decodes a request body (the group's codecs,
// JSON or YAML, lenient or strict field validation, converted to the internal version), runs
// the kind's validation on whatever decodes, and fails on any answer a client could not act on:
// a panic, an error without a field path or without a message, or an internal error.
package apifuzz

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// Kind is one kind a fuzz target decodes and validates.
type Kind struct {
	// Name is the kind's name, as in a body's "kind".
	Name string
	// New returns an empty object of the kind's internal type.
	New func() runtime.Object
	// Validate runs the kind's validations on a decoded object: create, an update from an
	// unchanged copy and a status update, as the registry strategies call them.
	Validate func(obj runtime.Object) field.ErrorList
}

// KindOf describes a kind by its typed validation functions. update and status may be nil for
// kinds without them (subresource bodies).
func KindOf[T runtime.Object](name string, newObj func() T, create func(T) field.ErrorList, update, status func(obj, old T) field.ErrorList) Kind {
	return Kind{
		Name: name,
		New:  func() runtime.Object { return newObj() },
		Validate: func(obj runtime.Object) field.ErrorList {
			typed := obj.(T)
			errs := create(typed)
			if update != nil {
				errs = append(errs, update(typed, typed.DeepCopyObject().(T))...)
			}
			if status != nil {
				errs = append(errs, status(typed, typed.DeepCopyObject().(T))...)
			}
			return errs
		},
	}
}

// Group is one API group's fuzz target: its scheme installer, served version and kinds.
type Group struct {
	// Install registers the group, internal and versioned, in a scheme.
	Install func(*runtime.Scheme)
	// Version is the served version bodies are decoded from.
	Version schema.GroupVersion
	// Kinds are the group's kinds; the fuzzer's first argument picks one.
	Kinds []Kind

	once   sync.Once
	codecs serializer.CodecFactory
}

// mode is how a body is decoded: as JSON or YAML, leniently or with strict field validation,
// the choices a client makes with Content-Type and fieldValidation.
type mode struct {
	mediaType string
	strict    bool
}

var modes = []mode{
	{runtime.ContentTypeJSON, false},
	{runtime.ContentTypeJSON, true},
	{runtime.ContentTypeYAML, false},
	{runtime.ContentTypeYAML, true},
}

// pick maps the fuzzer's selector to a kind and a decoding mode.
func (g *Group) pick(selector uint8) (Kind, mode) {
	n := int(selector)
	return g.Kinds[n%len(g.Kinds)], modes[(n/len(g.Kinds))%len(modes)]
}

// selector is the inverse of pick.
func (g *Group) selector(kind, m int) uint8 {
	return uint8(m*len(g.Kinds) + kind)
}

func (g *Group) init() {
	g.once.Do(func() {
		scheme := runtime.NewScheme()
		g.Install(scheme)
		g.codecs = serializer.NewCodecFactory(scheme)
	})
}

// Seed adds the corpus: a minimal body of every kind in every mode, and every document of the
// given YAML streams that belongs to the group, as JSON and as YAML.
func (g *Group) Seed(f *testing.F, streams ...[]byte) {
	f.Helper()
	g.init()
	if len(g.Kinds)*len(modes) > 256 {
		f.Fatalf("%d kinds do not fit the fuzzer's selector", len(g.Kinds))
	}
	for k, kind := range g.Kinds {
		minimal := fmt.Sprintf(`{"apiVersion":%q,"kind":%q,"metadata":{"name":"fuzz","namespace":"team-a"}}`, g.Version.String(), kind.Name)
		for m := range modes {
			f.Add(g.selector(k, m), []byte(minimal))
		}
	}
	for _, stream := range streams {
		for _, doc := range Documents(f, stream) {
			var head struct{ APIVersion, Kind string }
			if err := yaml.Unmarshal(doc, &head); err != nil || head.APIVersion != g.Version.String() {
				continue
			}
			for k, kind := range g.Kinds {
				if kind.Name != head.Kind {
					continue
				}
				asJSON, err := yaml.YAMLToJSON(doc)
				if err != nil {
					f.Fatalf("seed %s: %v", head.Kind, err)
				}
				f.Add(g.selector(k, 0), asJSON)
				f.Add(g.selector(k, 1), asJSON)
				f.Add(g.selector(k, 2), doc)
				f.Add(g.selector(k, 3), doc)
			}
		}
	}
}

// Check is the fuzz function: it decodes data as a body of the kind selector picks and, when
// that succeeds, validates it. A body the server would refuse at decoding (malformed, another
// kind, an unknown field under strict validation) is a 400 there and needs nothing more here.
func (g *Group) Check(t *testing.T, selector uint8, data []byte) {
	g.init()
	kind, m := g.pick(selector)
	info, ok := runtime.SerializerInfoForMediaType(g.codecs.SupportedMediaTypes(), m.mediaType)
	if !ok {
		t.Fatalf("no serializer for %s", m.mediaType)
	}
	s := info.Serializer
	if m.strict {
		s = info.StrictSerializer
	}
	decoder := g.codecs.DecoderToVersion(s, schema.GroupVersion{Group: g.Version.Group, Version: runtime.APIVersionInternal})
	defaultGVK := g.Version.WithKind(kind.Name)
	obj, _, err := decoder.Decode(data, &defaultGVK, kind.New())
	if err != nil || reflect.TypeOf(obj) != reflect.TypeOf(kind.New()) {
		return
	}
	CheckErrors(t, schema.GroupKind{Group: g.Version.Group, Kind: kind.Name}, obj, kind.Validate(obj))
}

// CheckErrors fails t with every problem Problems finds in errs.
func CheckErrors(t *testing.T, gk schema.GroupKind, obj runtime.Object, errs field.ErrorList) {
	t.Helper()
	for _, p := range Problems(gk, obj, errs) {
		t.Error(p)
	}
}

// Problems lists what keeps errs from reaching the client as a 422 Status whose every cause
// names a field and says what is wrong. An internal error is a problem too: it means the
// validation met an input it did not expect.
func Problems(gk schema.GroupKind, obj runtime.Object, errs field.ErrorList) []string {
	var out []string
	for _, e := range errs {
		switch {
		case e.Field == "" || e.Field == "<nil>": // a nil *field.Path prints as <nil>
			out = append(out, fmt.Sprintf("%s: an error without a field path: %v", gk.Kind, e))
		case strings.TrimSpace(e.ErrorBody()) == "":
			out = append(out, fmt.Sprintf("%s: an error at %s without a message", gk.Kind, e.Field))
		case e.Type == field.ErrorTypeInternal:
			out = append(out, fmt.Sprintf("%s: an internal error: %v", gk.Kind, e))
		}
	}
	if len(errs) == 0 {
		return out
	}
	name := ""
	if m, err := meta.Accessor(obj); obj != nil && err == nil {
		name = m.GetName()
	}
	status := apierrors.NewInvalid(gk, name, errs).Status()
	if status.Code != http.StatusUnprocessableEntity || status.Details == nil || len(status.Details.Causes) != len(errs) {
		out = append(out, fmt.Sprintf("%s: the errors do not make a 422 Status with one cause each: %+v", gk.Kind, status))
	}
	return out
}

// Documents splits a YAML stream into its documents.
func Documents(tb testing.TB, stream []byte) [][]byte {
	tb.Helper()
	var docs [][]byte
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(stream)))
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return docs
		}
		if err != nil {
			tb.Fatalf("reading a YAML stream: %v", err)
		}
		if len(bytes.TrimSpace(doc)) > 0 {
			docs = append(docs, doc)
		}
	}
}

// Examples reads every YAML file of the repository's artifacts/examples, the objects the
// documentation shows, as seeds.
func Examples(tb testing.TB) [][]byte {
	tb.Helper()
	return ReadAll(tb, filepath.Join(RepoRoot(tb), "artifacts", "examples", "*.yaml"))
}

// ReadAll reads every file matching pattern.
func ReadAll(tb testing.TB, pattern string) [][]byte {
	tb.Helper()
	paths, err := filepath.Glob(pattern)
	if err != nil || len(paths) == 0 {
		tb.Fatalf("no files match %s", pattern)
	}
	out := make([][]byte, 0, len(paths))
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, data)
	}
	return out
}

// RepoRoot is the directory of the module's go.mod, found upwards from the test's directory.
func RepoRoot(tb testing.TB) string {
	tb.Helper()
	dir, err := os.Getwd()
	if err != nil {
		tb.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			tb.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}

// JSON marshals v for a seed, failing tb on error.
func JSON(tb testing.TB, v any) []byte {
	tb.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	return data
}
