package render

import (
	"fmt"
	"path"
	"regexp"
	"sort"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// kustomizeMu serialises kustomize builds: kyaml keeps the OpenAPI schema a kustomization
// selects in package state, and concurrent builds race on it.
var kustomizeMu sync.Mutex

// kustomizationFiles are the names kustomize reads a kustomization from.
var kustomizationFiles = map[string]bool{"kustomization.yaml": true, "kustomization.yml": true, "Kustomization": true}

// renderKustomize builds the kustomization at k.Path over k.Files, in memory. Kustomize would
// clone a git URL (running git) or download an http URL given as a resource, base, component,
// patch or generator file; a pack holds its whole tree, so such references are refused before
// the build and the controller never fetches anything on a kustomization's behalf. Plugins
// are disabled (kustomize's default), so are Helm charts inside kustomizations.
func renderKustomize(k *Kustomize) ([]*unstructured.Unstructured, error) {
	fs := filesys.MakeFsInMemory()
	names := make([]string, 0, len(k.Files))
	for name := range k.Files {
		names = append(names, name)
	}
	sort.Strings(names)
	files := make(map[string][]byte, len(k.Files))
	for _, name := range names {
		clean, ok := relativePath(name)
		if !ok || clean == "." {
			return nil, &Error{Message: fmt.Sprintf("kustomize file name %q is not a relative path inside the directory", name)}
		}
		if err := fs.WriteFile("/"+clean, k.Files[name]); err != nil {
			return nil, &Error{Message: fmt.Sprintf("kustomize file %q: %v", name, err)}
		}
		files[clean] = k.Files[name]
	}
	for _, name := range names {
		clean, _ := relativePath(name)
		if kustomizationFiles[path.Base(clean)] {
			if err := checkLocal(files[clean], clean, files); err != nil {
				return nil, err
			}
		}
	}
	dir, ok := relativePath(k.Path)
	if !ok {
		return nil, &Error{Message: fmt.Sprintf("kustomize path %q is not a relative path inside the directory", k.Path)}
	}
	opts := krusty.MakeDefaultOptions()
	// The kustomization's sortOptions if it has some, else kustomize's legacy order: what
	// `kustomize build` and `kubectl kustomize` give.
	opts.Reorder = krusty.ReorderOptionUnspecified
	kustomizeMu.Lock()
	m, err := krusty.MakeKustomizer(opts).Run(fs, path.Join("/", dir))
	kustomizeMu.Unlock()
	if err != nil {
		return nil, &Error{Message: "kustomize: " + oneLine(err.Error())}
	}
	var objs []*unstructured.Unstructured
	for _, res := range m.Resources() {
		b, err := res.MarshalJSON()
		if err != nil {
			return nil, &Error{Message: "kustomize: " + oneLine(err.Error())}
		}
		decoded, err := decodeJSON(b)
		if err != nil {
			return nil, &Error{Message: "kustomize: " + oneLine(err.Error())}
		}
		objs = append(objs, decoded...)
	}
	return objs, nil
}

// relativePath cleans a slash path and says whether it stays inside its root ("" is the root
// itself, ".").
func relativePath(p string) (string, bool) {
	clean := path.Clean(p)
	if path.IsAbs(p) || clean == ".." || strings.HasPrefix(clean, "../") {
		return "", false
	}
	return clean, true
}

// checkLocal refuses a kustomization that references anything outside the pack: every file,
// directory or plugin configuration it names, and every path in plugin configurations it loads
// from the pack, must not be a URL kustomize would fetch.
func checkLocal(data []byte, name string, files map[string][]byte) error {
	var k types.Kustomization
	if err := yaml.Unmarshal(data, &k); err != nil {
		return &Error{Message: fmt.Sprintf("kustomize: %s: %v", name, err)}
	}
	k.FixKustomization()
	refs := append([]string{}, k.Resources...)
	refs = append(refs, k.Components...)
	refs = append(refs, k.Crds...)
	refs = append(refs, k.Configurations...)
	refs = append(refs, k.OpenAPI["path"])
	for _, p := range k.Patches {
		refs = append(refs, p.Path)
	}
	for _, p := range k.PatchesJson6902 {
		refs = append(refs, p.Path)
	}
	for _, p := range k.PatchesStrategicMerge {
		refs = append(refs, string(p))
	}
	for _, r := range k.Replacements {
		refs = append(refs, r.Path)
	}
	for _, g := range k.ConfigMapGenerator {
		refs = append(refs, sourcePaths(g.KvPairSources)...)
	}
	for _, g := range k.SecretGenerator {
		refs = append(refs, sourcePaths(g.KvPairSources)...)
	}
	dir := path.Dir(name)
	for _, plugins := range [][]string{k.Generators, k.Transformers, k.Validators} {
		for _, p := range plugins {
			refs = append(refs, p)
			// A plugin configuration, in a file of the pack or inline, may name files of its
			// own (a PatchTransformer's path, a ReplacementTransformer's replacements).
			cfg, ok := files[path.Join(dir, p)]
			if !ok {
				cfg = []byte(p)
			}
			refs = append(refs, pluginPaths(cfg)...)
		}
	}
	for _, ref := range refs {
		if remote(ref) {
			return &Error{Message: fmt.Sprintf("kustomize: %s references %q outside the pack; only files of the pack can be used", name, ref)}
		}
	}
	return nil
}

// sourcePaths are the files a generator reads: files ([key=]path) and envs.
func sourcePaths(s types.KvPairSources) []string {
	var paths []string
	for _, f := range s.FileSources {
		if _, p, found := strings.Cut(f, "="); found {
			f = p
		}
		paths = append(paths, f)
	}
	return append(paths, s.EnvSources...)
}

// pluginPaths collects the "path" fields anywhere in a plugin configuration file's documents.
func pluginPaths(data []byte) []string {
	objs, err := decodeYAML(data)
	if err != nil {
		// Not a configuration kustomize can read either; the build reports it.
		return nil
	}
	var paths []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				if s, ok := e.(string); ok && k == "path" {
					paths = append(paths, s)
				}
				walk(e)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	for _, o := range objs {
		walk(o.Object)
	}
	return paths
}

// remoteUser matches the user@ of an scp-like git URL (git@github.com:org/repo).
var remoteUser = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9-]*@`)

// remote says whether kustomize would treat ref as a git repository to clone or a URL to
// download rather than a path in its file system: a URL with a scheme (optionally after
// go-getter's git:: prefix), an scp-like user@host:path, or a github.com/ path.
func remote(ref string) bool {
	s := strings.ToLower(strings.TrimSpace(ref))
	s = strings.TrimPrefix(s, "git::")
	for _, prefix := range []string{"https://", "http://", "ssh://", "file://", "git://", "github.com/", "github.com:"} {
		if strings.HasPrefix(s, prefix) {
			return true
		}
	}
	return remoteUser.MatchString(s)
}
