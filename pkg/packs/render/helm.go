package render

import (
	"fmt"
	"path"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"sync"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/releaseutil"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// helmModule is the Helm SDK's module; helmModuleVersion is the version go.mod requires, used
// when the binary carries no module information.
const (
	helmModule        = "helm.sh/helm/v3"
	helmModuleVersion = "v3.22.0"
)

// HelmVersion is the version of the Helm SDK linked into this binary: its module version, as
// Helm keeps its own version string in an internal package.
func HelmVersion() string { return helmVersion() }

var helmVersion = sync.OnceValue(func() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if dep.Path != helmModule {
				continue
			}
			if dep.Replace != nil && dep.Replace.Version != "" {
				return dep.Replace.Version
			}
			if dep.Version != "" && dep.Version != "(devel)" {
				return dep.Version
			}
		}
	}
	return helmModuleVersion
})

// renderChart renders a loaded chart as `helm install` would, client-side only, and returns its
// objects (CRDs first, then the templates' objects in install order) and the hooks left out.
func renderChart(ch *chart.Chart, values []byte, opts Options) ([]*unstructured.Unstructured, []string, error) {
	vals := chartutil.Values{}
	if values != nil {
		var err error
		if vals, err = chartutil.ReadValues(values); err != nil {
			return nil, nil, &Error{Message: fmt.Sprintf("the chart values are not a JSON object: %v", err)}
		}
	}
	caps := chartutil.DefaultCapabilities.Copy()
	if opts.KubeVersion != "" {
		kv, err := chartutil.ParseKubeVersion(opts.KubeVersion)
		if err != nil {
			return nil, nil, &Error{Message: fmt.Sprintf("Kubernetes version %q is not a version", opts.KubeVersion)}
		}
		caps.KubeVersion = *kv
	}
	// A new slice: the default set is shared by every render.
	caps.APIVersions = slices.Concat(caps.APIVersions, opts.APIVersions)
	if ch.Metadata.KubeVersion != "" && !chartutil.IsCompatibleRange(ch.Metadata.KubeVersion, caps.KubeVersion.String()) {
		return nil, nil, &Error{Message: fmt.Sprintf("chart %s requires Kubernetes %s, not %s", ch.Name(), ch.Metadata.KubeVersion, caps.KubeVersion.String())}
	}
	if err := checkDependencies(ch); err != nil {
		return nil, nil, err
	}
	if err := chartutil.ProcessDependenciesWithMerge(ch, vals); err != nil {
		return nil, nil, &Error{Message: fmt.Sprintf("chart %s dependencies: %v", ch.Name(), err)}
	}
	rel := chartutil.ReleaseOptions{Name: opts.ReleaseName, Namespace: opts.Namespace, Revision: 1, IsInstall: true}
	top, err := chartutil.ToRenderValues(ch, vals, rel, caps)
	if err != nil {
		return nil, nil, &Error{Message: oneLine(err.Error())}
	}
	files, err := engine.Engine{}.Render(ch, top)
	if err != nil {
		return nil, nil, templateError(err)
	}
	var objs []*unstructured.Unstructured
	for _, crd := range ch.CRDObjects() {
		decoded, err := decodeYAML(crd.File.Data)
		if err != nil {
			return nil, nil, &Error{Template: crd.Filename, Message: oneLine(err.Error())}
		}
		objs = append(objs, decoded...)
	}
	manifests, skipped, err := templateObjects(files)
	if err != nil {
		return nil, nil, err
	}
	return append(objs, manifests...), skipped, nil
}

// templateObjects decodes the rendered templates into objects in Helm's install order, leaving
// hooks out and naming them. It does what Helm's releaseutil.SortManifests does (templates in
// name order, partials and empty documents skipped, a stable sort by kind with unknown kinds
// last by name) but decodes each document once, not once to sort and once more to apply.
func templateObjects(files map[string]string) ([]*unstructured.Unstructured, []string, error) {
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	var objs []*unstructured.Unstructured
	var hooks []*unstructured.Unstructured
	for _, p := range paths {
		if strings.HasPrefix(path.Base(p), "_") || strings.HasSuffix(p, "NOTES.txt") || strings.TrimSpace(files[p]) == "" {
			continue
		}
		docs := releaseutil.SplitManifests(files[p])
		keys := make([]string, 0, len(docs))
		for k := range docs {
			keys = append(keys, k)
		}
		sort.Sort(releaseutil.BySplitManifestsOrder(keys))
		for _, k := range keys {
			js, err := yaml.YAMLToJSON([]byte(docs[k]))
			if err != nil {
				return nil, nil, &Error{Template: p, Message: oneLine(err.Error())}
			}
			decoded, err := decodeJSON(js)
			if err != nil {
				return nil, nil, &Error{Template: p, Message: oneLine(err.Error())}
			}
			for _, u := range decoded {
				if _, hook := u.GetAnnotations()[release.HookAnnotation]; hook {
					hooks = append(hooks, u)
					continue
				}
				if msg := checkObject(u); msg != "" {
					return nil, nil, &Error{Template: p, Message: msg}
				}
				objs = append(objs, u)
			}
		}
	}
	sortByKind(objs)
	sortByKind(hooks)
	var skipped []string
	for _, h := range hooks {
		skipped = append(skipped, h.GetKind()+" "+h.GetName())
	}
	return objs, skipped, nil
}

// installRank is each kind's place in Helm's install order.
var installRank = func() map[string]int {
	m := make(map[string]int, len(releaseutil.InstallOrder))
	for i, k := range releaseutil.InstallOrder {
		m[k] = i
	}
	return m
}()

// sortByKind orders objects as Helm installs them: known kinds in Helm's order, then unknown
// kinds by name, keeping the template order within a kind.
func sortByKind(objs []*unstructured.Unstructured) {
	sort.SliceStable(objs, func(i, j int) bool {
		a, b := objs[i].GetKind(), objs[j].GetKind()
		ra, aok := installRank[a]
		rb, bok := installRank[b]
		switch {
		case aok && bok:
			return ra < rb
		case aok != bok:
			return aok
		}
		return a < b
	})
}

// checkDependencies refuses a chart whose Chart.yaml lists a dependency its charts/ directory
// lacks, as `helm install` does.
func checkDependencies(ch *chart.Chart) error {
	var missing []string
	for _, dep := range ch.Metadata.Dependencies {
		found := false
		for _, sub := range ch.Dependencies() {
			if sub.Name() == dep.Name {
				found = true
				break
			}
		}
		if !found {
			missing = append(missing, dep.Name)
		}
	}
	if len(missing) > 0 {
		return &Error{Message: fmt.Sprintf("chart %s lists dependencies its charts/ directory lacks: %s", ch.Name(), strings.Join(missing, ", "))}
	}
	return nil
}
