package fluxinstall

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

const crdYAML = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: %s
  labels:
    existing: kept
spec:
  group: example.io
`

// writeDir writes a manifests directory: per controller, the named CRDs and a VERSION.
func writeDir(t *testing.T, version string, crds map[string][]string) string {
	t.Helper()
	dir := t.TempDir()
	for controller, names := range crds {
		sub := filepath.Join(dir, controller)
		if err := os.MkdirAll(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		if version != "" {
			if err := os.WriteFile(filepath.Join(sub, "VERSION"), []byte(version+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		for _, name := range names {
			if err := os.WriteFile(filepath.Join(sub, name+".yaml"), []byte(strings.ReplaceAll(crdYAML, "%s", name)), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir
}

func validCRDs() map[string][]string {
	return map[string][]string{
		"source-controller":    {"ocirepositories.source.toolkit.fluxcd.io", "buckets.source.toolkit.fluxcd.io"},
		"kustomize-controller": {"kustomizations.kustomize.toolkit.fluxcd.io"},
	}
}

func TestLoadLabelsTheCRDs(t *testing.T) {
	m, err := Load(writeDir(t, Version, validCRDs()))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, o := range m.CRDs() {
		names = append(names, o.GetName())
		if o.Resource != CRDs {
			t.Errorf("%s: resource %v", o.GetName(), o.Resource)
		}
		l := o.GetLabels()
		component := "source-controller"
		if strings.HasPrefix(o.GetName(), "kustomizations.") {
			component = "kustomize-controller"
		}
		if l[LabelComponent] != component || l[LabelVersion] != Version || l[LabelPartOf] != "flux" || l[LabelManagedBy] != ManagedBy || l["existing"] != "kept" {
			t.Errorf("%s: labels %v", o.GetName(), l)
		}
		if !Managed(o.Unstructured) {
			t.Errorf("%s is not Managed", o.GetName())
		}
	}
	// Each controller's CRDs in file order, source-controller's first.
	want := []string{"buckets.source.toolkit.fluxcd.io", "ocirepositories.source.toolkit.fluxcd.io", "kustomizations.kustomize.toolkit.fluxcd.io"}
	if !slices.Equal(names, want) {
		t.Errorf("CRDs %v, want %v", names, want)
	}
	// CRDs returns copies: a caller's change does not reach the next call.
	m.CRDs()[0].SetName("changed")
	if m.CRDs()[0].GetName() != want[0] {
		t.Error("CRDs returned the stored objects")
	}
}

func TestLoadRefusesBadDirectories(t *testing.T) {
	missingKustomize := validCRDs()
	delete(missingKustomize, "kustomize-controller")
	noFiles := validCRDs()
	noFiles["kustomize-controller"] = nil
	notCRD := writeDir(t, Version, validCRDs())
	if err := os.WriteFile(filepath.Join(notCRD, "source-controller", "zz.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	badYAML := writeDir(t, Version, validCRDs())
	if err := os.WriteFile(filepath.Join(badYAML, "source-controller", "zz.yaml"), []byte("kind: [\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct{ dir, want string }{
		"no directory":       {"", "no Flux manifests directory"},
		"directory missing":  {filepath.Join(t.TempDir(), "absent"), "reading the version of source-controller's CRDs"},
		"controller missing": {writeDir(t, Version, missingKustomize), "reading the version of kustomize-controller's CRDs"},
		"no VERSION":         {writeDir(t, "", validCRDs()), "reading the version"},
		"another version":    {writeDir(t, "v1.8.0", validCRDs()), `of version "v1.8.0", not v1.9.6`},
		"no CRD files":       {writeDir(t, Version, noFiles), "has no CRDs"},
		"not a CRD":          {notCRD, "zz.yaml is not a named apiextensions.k8s.io/v1 CustomResourceDefinition"},
		"not YAML":           {badYAML, "zz.yaml"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Load(tc.dir)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Load: %v, want an error with %q", err, tc.want)
			}
		})
	}
}

func TestWorkloads(t *testing.T) {
	objs := Workloads()
	var order []string
	for _, o := range objs {
		order = append(order, o.GetKind()+"/"+o.GetName())
		l := o.GetLabels()
		if l[LabelPartOf] != "flux" || l[LabelVersion] != Version || l[LabelManagedBy] != ManagedBy {
			t.Errorf("%s/%s: labels %v", o.GetKind(), o.GetName(), l)
		}
		if o.GetKind() != "Namespace" && o.GetKind() != "ClusterRoleBinding" && l[LabelComponent] != o.GetName() {
			t.Errorf("%s/%s: component %q", o.GetKind(), o.GetName(), l[LabelComponent])
		}
		if _, ok := o.Object["status"]; ok {
			t.Errorf("%s/%s carries a status, which an apply would claim", o.GetKind(), o.GetName())
		}
		namespaced := o.Resource != Namespaces && o.Resource != ClusterRoleBindings
		if namespaced != (o.GetNamespace() == Namespace) {
			t.Errorf("%s/%s: namespace %q", o.GetKind(), o.GetName(), o.GetNamespace())
		}
	}
	want := []string{"Namespace/flux-system", "ServiceAccount/source-controller", "ServiceAccount/kustomize-controller",
		"ClusterRoleBinding/plinth-flux-controllers", "Service/source-controller", "Deployment/source-controller", "Deployment/kustomize-controller"}
	if !slices.Equal(order, want) {
		t.Fatalf("objects %v, want %v", order, want)
	}

	var binding rbacv1.ClusterRoleBinding
	convert(t, objs[3], &binding)
	if binding.RoleRef.Name != "cluster-admin" || len(binding.Subjects) != 2 || binding.Subjects[1].Name != "kustomize-controller" || binding.Subjects[1].Namespace != Namespace {
		t.Errorf("binding %+v", binding)
	}
	var svc corev1.Service
	convert(t, objs[4], &svc)
	if p := svc.Spec.Ports; len(p) != 1 || p[0].Port != 80 || p[0].TargetPort.StrVal != "http" || svc.Spec.Selector["app"] != "source-controller" {
		t.Errorf("service %+v", svc.Spec)
	}

	var source, kustomize appsv1.Deployment
	convert(t, objs[5], &source)
	convert(t, objs[6], &kustomize)
	for _, d := range []*appsv1.Deployment{&source, &kustomize} {
		c := d.Spec.Template.Spec.Containers[0]
		if c.Name != "manager" || c.Image != "ghcr.io/fluxcd/"+d.Name+":v1.9.6" {
			t.Errorf("%s: container %s image %s", d.Name, c.Name, c.Image)
		}
		if d.Spec.Template.Labels["app"] != d.Name || d.Spec.Selector.MatchLabels["app"] != d.Name || d.Spec.Template.Spec.ServiceAccountName != d.Name {
			t.Errorf("%s: selector %v, pod labels %v, service account %s", d.Name, d.Spec.Selector, d.Spec.Template.Labels, d.Spec.Template.Spec.ServiceAccountName)
		}
		if e := c.Env[0]; e.Name != "RUNTIME_NAMESPACE" || e.ValueFrom == nil || e.ValueFrom.FieldRef.FieldPath != "metadata.namespace" {
			t.Errorf("%s: env %+v", d.Name, c.Env)
		}
		if !slices.Contains(c.Args, "--watch-all-namespaces") || !slices.Contains(c.Args, "--enable-leader-election") || c.ReadinessProbe == nil {
			t.Errorf("%s: args %v, readiness %v", d.Name, c.Args, c.ReadinessProbe)
		}
		if !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == "/tmp" }) {
			t.Errorf("%s: mounts %v", d.Name, c.VolumeMounts)
		}
	}
	sc := source.Spec.Template.Spec.Containers[0]
	for _, arg := range []string{"--storage-path=/data", "--storage-adv-addr=source-controller.$(RUNTIME_NAMESPACE).svc.cluster.local."} {
		if !slices.Contains(sc.Args, arg) {
			t.Errorf("source-controller lacks %s: %v", arg, sc.Args)
		}
	}
	if sc.Ports[0].Name != "http" || sc.Ports[0].ContainerPort != 9090 || sc.ReadinessProbe.HTTPGet.Port.StrVal != "http" {
		t.Errorf("source-controller: ports %v, readiness %+v", sc.Ports, sc.ReadinessProbe.HTTPGet)
	}
	if !slices.ContainsFunc(sc.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == "/data" }) {
		t.Errorf("source-controller: mounts %v", sc.VolumeMounts)
	}
	kc := kustomize.Spec.Template.Spec.Containers[0]
	if slices.ContainsFunc(kc.Args, func(a string) bool { return strings.HasPrefix(a, "--storage") }) || kc.ReadinessProbe.HTTPGet.Port.StrVal != "healthz" {
		t.Errorf("kustomize-controller: args %v, readiness %+v", kc.Args, kc.ReadinessProbe.HTTPGet)
	}
}

func convert(t *testing.T, o Object, into any) {
	t.Helper()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, into); err != nil {
		t.Fatal(err)
	}
}
