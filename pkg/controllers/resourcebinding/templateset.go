package resourcebinding

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"

	listers "github.com/plinth-dev/plinth/pkg/generated/listers/score/v1b1"
	"github.com/plinth-dev/plinth/pkg/provisioners"
)

// staticTemplates are the template provisioners fixed for the process's life: the provisioners
// file (--provisioners-config), then Plinth's built-in template provisioners.
func staticTemplates(configFile string) ([]provisioners.Entry, error) {
	var out []provisioners.Entry
	if configFile != "" {
		data, err := os.ReadFile(configFile)
		if err != nil {
			return nil, err
		}
		specs, skipped, err := provisioners.ParseFile(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", configFile, err)
		}
		for _, reason := range skipped {
			klog.InfoS("Provisioner left out", "file", configFile, "reason", reason.Error())
		}
		for i, spec := range specs {
			t, err := provisioners.Compile(spec)
			if err != nil {
				return nil, fmt.Errorf("%s: [%d]: %w", configFile, i, err)
			}
			out = append(out, provisioners.Entry{Name: fmt.Sprintf("%s[%d]", configFile, i), Source: provisioners.SourceConfigFile, Template: t})
		}
	}
	builtIn, err := provisioners.BuiltIn()
	if err != nil {
		return nil, err
	}
	for i, spec := range builtIn {
		t, err := provisioners.Compile(spec)
		if err != nil {
			return nil, fmt.Errorf("built-in provisioner %d: %w", i, err)
		}
		out = append(out, provisioners.Entry{Name: fmt.Sprintf("built-in[%d]", i), Source: provisioners.SourceBuiltIn, Template: t})
	}
	return out, nil
}

// CheckProvisionersFile reads and checks a provisioners file without binding it to a cluster:
// plinth-controller calls it while it validates its flags, so a broken file (a template that
// does not parse, a cmd:// provisioner) is reported with the other bad flags, before anything
// starts.
func CheckProvisionersFile(path string) error {
	_, err := staticTemplates(path)
	return err
}

// templateSet is the template provisioners bindings resolve against: the static ones and the
// Provisioner objects. Reconciles read the current set without locks; a change of the objects
// builds a new one, compiling only the objects whose resourceVersion changed.
type templateSet struct {
	static  []provisioners.Entry
	objects listers.ProvisionerLister
	current atomic.Pointer[provisioners.Set]

	mu       sync.Mutex
	compiled map[string]compiledObject
}

type compiledObject struct {
	resourceVersion string
	template        *provisioners.Template
}

func newTemplateSet(static []provisioners.Entry, objects listers.ProvisionerLister) *templateSet {
	s := &templateSet{static: static, objects: objects, compiled: map[string]compiledObject{}}
	s.current.Store(provisioners.NewSet(static...))
	return s
}

func (s *templateSet) match(typ, class, id string) *provisioners.Entry {
	return s.current.Load().Match(typ, class, id)
}

func (s *templateSet) named(typ string, source provisioners.Source, name string) *provisioners.Entry {
	return s.current.Load().Named(typ, source, name)
}

// rebuild makes the set from the objects the lister holds now.
func (s *templateSet) rebuild() {
	s.mu.Lock()
	defer s.mu.Unlock()
	objects, err := s.objects.List(labels.Everything())
	if err != nil {
		klog.ErrorS(err, "Listing Provisioners failed")
		return
	}
	entries := append([]provisioners.Entry(nil), s.static...)
	seen := map[string]bool{}
	for _, p := range objects {
		seen[p.Name] = true
		c, ok := s.compiled[p.Name]
		if !ok || c.resourceVersion != p.ResourceVersion {
			t, err := provisioners.Compile(p.Spec)
			if err != nil {
				// Admission compiled it already; an object written before a stricter check
				// is left out rather than failing every binding.
				klog.ErrorS(err, "Provisioner left out", "provisioner", p.Name)
				continue
			}
			c = compiledObject{resourceVersion: p.ResourceVersion, template: t}
			s.compiled[p.Name] = c
		}
		entries = append(entries, provisioners.Entry{Name: p.Name, Source: provisioners.SourceObject, Template: c.template})
	}
	for name := range s.compiled {
		if !seen[name] {
			delete(s.compiled, name)
		}
	}
	s.current.Store(provisioners.NewSet(entries...))
}
