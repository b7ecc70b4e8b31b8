package score

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/score-spec/score-go/framework"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
)

// Outputs are what one bound resource publishes: plain values, and the names of outputs whose
// values are secret (held in a Secret the runtime reads, never copied into the plan).
type Outputs struct {
	Values  map[string]string
	Secrets sets.Set[string]
}

// Projection is a plan's content derived from a workload and its bindings' outputs.
type Projection struct {
	Projection v1b1.WorkloadProjection
	Bindings   []v1b1.PlanBinding
}

// ProjectionError says which placeholder could not be resolved; it maps to the
// ProjectionError reason. Message is one or more sentences in the user's own words (the
// resource, the output, the metadata key they wrote), fit for a condition.
type ProjectionError struct {
	Path    *field.Path
	Message string
}

// projectionError wraps what substituting at fldPath failed with: each placeholder's own
// sentence, joined.
func projectionError(fldPath *field.Path, err error) *ProjectionError {
	var sentences []string
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range joined.Unwrap() {
			sentences = append(sentences, e.Error())
		}
	} else {
		sentences = append(sentences, err.Error())
	}
	return &ProjectionError{Path: fldPath, Message: strings.Join(sentences, " ")}
}

func (e *ProjectionError) Error() string { return e.Path.String() + ": " + e.Message }

// Metadata is what ${metadata...} placeholders see: name, namespace and annotations.
func Metadata(w *v1b1.Workload) map[string]interface{} {
	meta := map[string]interface{}{"name": w.Name, "namespace": w.Namespace}
	if len(w.Annotations) > 0 {
		annotations := map[string]interface{}{}
		for k, v := range w.Annotations {
			annotations[k] = v
		}
		meta["annotations"] = annotations
	}
	return meta
}

// SecretEnvName is the hidden variable that carries a secret output into a value that embeds
// it: Kubernetes expands $(NAME) from earlier variables, so the secret never enters the plan.
func SecretEnvName(resource, output string) string {
	return "PLINTH_SECRET_" + strings.ToUpper(envSafe.ReplaceAllString(resource+"_"+output, "_"))
}

var envSafe = regexp.MustCompile(`[^A-Za-z0-9_]`)

// Project resolves the workload's placeholders against the bindings' outputs (keyed by resource
// name) and metadata, producing the runtime projection. Secret outputs become references: a
// variable that is exactly one secret placeholder is taken `from` the binding; a variable that
// embeds secrets gets hidden `from` variables it refers to with $(NAME); file contents keep
// secret placeholders for the runtime to fill from the Secret. Each value is expanded once over
// the whole way to the container: variables are final text here, written in Kubernetes' syntax
// ($$ for a $); file contents stay in Score's syntax, escapes and all, for the runtime's one
// expansion; volume sources are final.
func Project(w *v1b1.Workload, resolved *Workload, outputs map[string]Outputs) (*Projection, error) {
	meta := Metadata(w)
	spec := field.NewPath("spec")
	p := &Projection{Projection: v1b1.WorkloadProjection{Containers: map[string]v1b1.ContainerProjection{}}}
	used := map[string]sets.Set[string]{}
	for _, name := range sets.List(sets.KeySet(resolved.Containers)) {
		c := resolved.Containers[name]
		base := resolved.path(spec, "containers", name)
		cp := v1b1.ContainerProjection{Image: c.Image, Command: c.Command, Args: c.Args, Resources: c.Resources,
			LivenessProbe: c.LivenessProbe, ReadinessProbe: c.ReadinessProbe}
		hidden := sets.New[string]()
		for _, key := range sets.List(sets.KeySet(c.Variables)) {
			env, extra, err := projectVariable(key, c.Variables[key], meta, outputs, used, base.Child("variables", key))
			if err != nil {
				return nil, err
			}
			for _, e := range extra {
				if !hidden.Has(e.Name) {
					hidden.Insert(e.Name)
					cp.Env = append(cp.Env, e)
				}
			}
			cp.Env = append(cp.Env, env)
		}
		for i, f := range c.Files {
			if f.Content != nil && !f.NoExpand {
				content, err := substituteKeepingSecrets(*f.Content, meta, outputs, used, base.Child("files").Index(i).Child("content"))
				if err != nil {
					return nil, err
				}
				f.Content = &content
			}
			cp.Files = append(cp.Files, f)
		}
		for i, v := range c.Volumes {
			source, err := substitute(v.Source, meta, outputs, used, base.Child("volumes").Index(i).Child("source"))
			if err != nil {
				return nil, err
			}
			v.Source = source
			cp.Volumes = append(cp.Volumes, v)
		}
		// Hidden secret variables must precede the variables that expand them.
		sort.SliceStable(cp.Env, func(i, j int) bool {
			return hidden.Has(cp.Env[i].Name) && !hidden.Has(cp.Env[j].Name)
		})
		p.Projection.Containers[name] = cp
	}
	if resolved.Service != nil && len(resolved.Service.Ports) > 0 {
		p.Projection.Service = &v1b1.ServiceProjection{Ports: resolved.Service.Ports}
	}
	for _, name := range sets.List(sets.KeySet(resolved.Resources)) {
		pb := v1b1.PlanBinding{Key: name, Type: resolved.Resources[name].Type, Critical: true}
		pb.Outputs = sets.List(used[name])
		p.Bindings = append(p.Bindings, pb)
	}
	return p, nil
}

func projectVariable(name, value string, meta map[string]interface{}, outputs map[string]Outputs, used map[string]sets.Set[string],
	fldPath *field.Path) (v1b1.EnvProjection, []v1b1.EnvProjection, error) {
	// A value that is exactly one secret output is referenced directly.
	if ref, ok := wholePlaceholder(value); ok {
		parts := framework.SplitRefParts(ref)
		if len(parts) == 3 && parts[0] == "resources" {
			if out, ok := outputs[parts[1]]; ok && out.Secrets.Has(parts[2]) {
				markUsed(used, parts[1], parts[2])
				return v1b1.EnvProjection{Name: name, From: &v1b1.BindingOutputSource{BindingKey: parts[1], OutputKey: parts[2]}}, nil, nil
			}
		}
	}
	var hidden []v1b1.EnvProjection
	resolvedValue, err := framework.SubstituteString(value, func(ref string) (string, error) {
		parts := framework.SplitRefParts(ref)
		if len(parts) == 3 && parts[0] == "resources" {
			if out, ok := outputs[parts[1]]; ok && out.Secrets.Has(parts[2]) {
				markUsed(used, parts[1], parts[2])
				envName := SecretEnvName(parts[1], parts[2])
				hidden = append(hidden, v1b1.EnvProjection{Name: envName, From: &v1b1.BindingOutputSource{BindingKey: parts[1], OutputKey: parts[2]}})
				return refOpen + envName + refClose, nil
			}
		}
		return lookup(ref, meta, outputs, used)
	})
	if err != nil {
		return v1b1.EnvProjection{}, nil, &ProjectionError{Path: fldPath, Message: err.Error()}
	}
	// The value is final here, its Score escapes undone; the runtime reads it in Kubernetes'
	// syntax, where $(NAME) is a variable and $$ a $. Every $ is doubled, so the runtime's one
	// expansion gives this text back exactly (a literal $$ stays $$, $(x) stays $(x)); then the
	// references to the hidden secret variables go in.
	resolvedValue = escapeDollars(resolvedValue)
	resolvedValue = strings.NewReplacer(refOpen, "$(", refClose, ")").Replace(resolvedValue)
	return v1b1.EnvProjection{Name: name, Value: &resolvedValue}, hidden, nil
}

// substitute resolves placeholders in s, Score's escapes undone: the final text. A secret output
// here is an error.
func substitute(s string, meta map[string]interface{}, outputs map[string]Outputs, used map[string]sets.Set[string], fldPath *field.Path) (string, error) {
	out, err := framework.SubstituteString(s, func(ref string) (string, error) {
		parts := framework.SplitRefParts(ref)
		if len(parts) == 3 && parts[0] == "resources" {
			if o, ok := outputs[parts[1]]; ok && o.Secrets.Has(parts[2]) {
				return "", fmt.Errorf("Output %q of resource %q is secret and cannot be used here.", parts[2], parts[1])
			}
		}
		return lookup(ref, meta, outputs, used)
	})
	if err != nil {
		return "", projectionError(fldPath, err)
	}
	return out, nil
}

// substituteKeepingSecrets resolves the plain placeholders in a file's content and leaves the
// secret ones for the runtime, which fills them from the Secrets where they are kept (the
// secrets never enter the plan). The result is still in Score's syntax, for the runtime to
// expand exactly once: Score's escapes stay as written ($$ and $${...}), and every $ of a
// resolved value is doubled. Expanding here and again in the runtime would undo an escape twice:
// $${HOME} would become ${HOME} here and an unknown placeholder there, and $${resources.db.password}
// would be filled with the password.
func substituteKeepingSecrets(s string, meta map[string]interface{}, outputs map[string]Outputs, used map[string]sets.Set[string], fldPath *field.Path) (string, error) {
	keep := func(escape string) (string, error) { return escape, nil }
	sub := &framework.Substituter{UnEscaper: keep, Replacer: func(ref string) (string, error) {
		parts := framework.SplitRefParts(ref)
		if len(parts) == 3 && parts[0] == "resources" {
			if o, ok := outputs[parts[1]]; ok && o.Secrets.Has(parts[2]) {
				markUsed(used, parts[1], parts[2])
				return "${" + ref + "}", nil
			}
		}
		v, err := lookup(ref, meta, outputs, used)
		return escapeDollars(v), err
	}}
	out, err := sub.SubstituteString(s)
	if err != nil {
		return "", projectionError(fldPath, err)
	}
	return out, nil
}

// escapeDollars doubles every $, which both Score's syntax and Kubernetes' read as one $.
func escapeDollars(s string) string { return strings.ReplaceAll(s, "$", "$$") }

// lookup resolves a non-secret reference. ${resources.NAME} alone is the resource's source
// output (volumes), as in score-k8s.
func lookup(ref string, meta map[string]interface{}, outputs map[string]Outputs, used map[string]sets.Set[string]) (string, error) {
	parts := framework.SplitRefParts(ref)
	switch parts[0] {
	case "metadata":
		var v interface{} = meta
		for _, p := range parts[1:] {
			m, ok := v.(map[string]interface{})
			if !ok {
				return "", fmt.Errorf("The workload's metadata has no %q.", strings.Join(parts[1:], "."))
			}
			if v, ok = m[p]; !ok {
				return "", fmt.Errorf("The workload's metadata has no %q.", strings.Join(parts[1:], "."))
			}
		}
		return fmt.Sprint(v), nil
	case "resources":
		if len(parts) < 2 {
			return "", fmt.Errorf("${%s} names no resource.", ref)
		}
		out, ok := outputs[parts[1]]
		if !ok {
			return "", fmt.Errorf("Resource %q has no outputs yet.", parts[1])
		}
		key := "source"
		if len(parts) > 2 {
			key = strings.Join(parts[2:], ".")
		}
		value, ok := out.Values[key]
		if !ok {
			return "", missingOutput(parts[1], key, out)
		}
		markUsed(used, parts[1], key)
		return value, nil
	}
	return "", fmt.Errorf("${%s} refers to neither metadata nor resources.", ref)
}

// missingOutput names the output the workload asked for and the ones the resource has (names
// only: a secret output's name is no secret).
func missingOutput(resource, output string, out Outputs) error {
	names := sets.KeySet(out.Values).Union(out.Secrets)
	if out.Secrets.Has(output) {
		return fmt.Errorf("Output %q of resource %q is secret and cannot be used here.", output, resource)
	}
	if names.Len() == 0 {
		return fmt.Errorf("Resource %q has no output %q; it has none.", resource, output)
	}
	return fmt.Errorf("Resource %q has no output %q; it has: %s.", resource, output, strings.Join(sets.List(names), ", "))
}

func markUsed(used map[string]sets.Set[string], resource, output string) {
	if used[resource] == nil {
		used[resource] = sets.New[string]()
	}
	used[resource].Insert(output)
}

// wholePlaceholder reports whether s is exactly one ${...} placeholder.
func wholePlaceholder(s string) (string, bool) {
	if !strings.HasPrefix(s, "${") || !strings.HasSuffix(s, "}") || strings.Count(s, "${") != 1 {
		return "", false
	}
	return s[2 : len(s)-1], true
}

// refOpen and refClose mark a $(NAME) reference while literal $( is escaped; neither can occur
// in a Kubernetes object's string.
const refOpen, refClose = "\x00", "\x01"

// Endpoint picks the workload's canonical URL: a port named web, http, https or main first (in
// that order), else the only port; https when the port is named https or is 443; the default
// port of the scheme is omitted. host is where the workload is reached.
func Endpoint(host string, service *v1b1.ServiceSpec) *string {
	if service == nil || len(service.Ports) == 0 {
		return nil
	}
	name := ""
	for _, candidate := range []string{"https", "web", "http", "main"} {
		if _, ok := service.Ports[candidate]; ok {
			name = candidate
			break
		}
	}
	if name == "" {
		if len(service.Ports) != 1 {
			return nil
		}
		for n := range service.Ports {
			name = n
		}
	}
	port := service.Ports[name]
	if port.Protocol == "UDP" {
		return nil
	}
	scheme := "http"
	if name == "https" || port.Port == 443 {
		scheme = "https"
	}
	url := scheme + "://" + host
	if !(scheme == "http" && port.Port == 80) && !(scheme == "https" && port.Port == 443) {
		url += ":" + strconv.Itoa(int(port.Port))
	}
	return &url
}
