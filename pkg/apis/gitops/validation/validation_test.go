package validation

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/plinth-dev/plinth/pkg/apis/common"
	"github.com/plinth-dev/plinth/pkg/apis/gitops"
)

type wantErr struct {
	field string
	typ   field.ErrorType
}

// expectOne fails unless errs is exactly one error on want.field of want.typ.
func expectOne(t *testing.T, name string, errs field.ErrorList, want wantErr) {
	t.Helper()
	if len(errs) != 1 || errs[0].Field != want.field || errs[0].Type != want.typ {
		t.Errorf("%s: got %v, want one %s error on %s", name, errs, want.typ, want.field)
	}
}

func registry() *gitops.OCIRegistry {
	return &gitops.OCIRegistry{
		ObjectMeta: metav1.ObjectMeta{Name: "local-registry", Namespace: "plinth-system", ResourceVersion: "1"},
		Spec: gitops.OCIRegistrySpec{Endpoint: "localhost:5000", Port: 5000, DataPath: "/var/lib/plinth/registry",
			Retention: &gitops.RetentionPolicy{KeepVersions: 5}},
	}
}

func TestValidOCIRegistry(t *testing.T) {
	if errs := ValidateOCIRegistry(registry()); len(errs) > 0 {
		t.Fatalf("valid registry: %v", errs)
	}
	volume := registry()
	volume.Spec.DataPath, volume.Spec.VolumeName, volume.Spec.Retention = "", "registry-data", nil
	if errs := ValidateOCIRegistry(volume); len(errs) > 0 {
		t.Fatalf("registry on a volume: %v", errs)
	}
	neither := registry()
	neither.Spec.DataPath = ""
	neither.Spec.Endpoint, neither.Spec.Port = "localhost:65535", 65535
	if errs := ValidateOCIRegistry(neither); len(errs) > 0 {
		t.Fatalf("registry with neither dataPath nor volumeName: %v", errs)
	}
}

func TestOCIRegistryRules(t *testing.T) {
	cases := map[string]struct {
		mutate func(*gitops.OCIRegistry)
		want   wantErr
	}{
		"name not a DNS label":     {func(r *gitops.OCIRegistry) { r.Name = "local.registry" }, wantErr{"metadata.name", field.ErrorTypeInvalid}},
		"no endpoint":              {func(r *gitops.OCIRegistry) { r.Spec.Endpoint = "" }, wantErr{"spec.endpoint", field.ErrorTypeRequired}},
		"endpoint on 127.0.0.1":    {func(r *gitops.OCIRegistry) { r.Spec.Endpoint = "127.0.0.1:5000" }, wantErr{"spec.endpoint", field.ErrorTypeInvalid}},
		"endpoint on another host": {func(r *gitops.OCIRegistry) { r.Spec.Endpoint = "registry.example.com:5000" }, wantErr{"spec.endpoint", field.ErrorTypeInvalid}},
		"endpoint localhost.":      {func(r *gitops.OCIRegistry) { r.Spec.Endpoint = "localhost.:5000" }, wantErr{"spec.endpoint", field.ErrorTypeInvalid}},
		"endpoint without port":    {func(r *gitops.OCIRegistry) { r.Spec.Endpoint = "localhost" }, wantErr{"spec.endpoint", field.ErrorTypeInvalid}},
		"endpoint with a scheme":   {func(r *gitops.OCIRegistry) { r.Spec.Endpoint = "http://localhost:5000" }, wantErr{"spec.endpoint", field.ErrorTypeInvalid}},
		"endpoint with a path":     {func(r *gitops.OCIRegistry) { r.Spec.Endpoint = "localhost:5000/v2" }, wantErr{"spec.endpoint", field.ErrorTypeInvalid}},
		"endpoint port signed":     {func(r *gitops.OCIRegistry) { r.Spec.Endpoint = "localhost:+5000" }, wantErr{"spec.endpoint", field.ErrorTypeInvalid}},
		"endpoint port padded":     {func(r *gitops.OCIRegistry) { r.Spec.Endpoint = "localhost:05000" }, wantErr{"spec.endpoint", field.ErrorTypeInvalid}},
		"endpoint port differs":    {func(r *gitops.OCIRegistry) { r.Spec.Endpoint = "localhost:5001" }, wantErr{"spec.endpoint", field.ErrorTypeInvalid}},
		"no port":                  {func(r *gitops.OCIRegistry) { r.Spec.Port = 0 }, wantErr{"spec.port", field.ErrorTypeRequired}},
		"privileged port": {func(r *gitops.OCIRegistry) { r.Spec.Port, r.Spec.Endpoint = 443, "localhost:443" },
			wantErr{"spec.port", field.ErrorTypeInvalid}},
		"port above range": {func(r *gitops.OCIRegistry) { r.Spec.Port, r.Spec.Endpoint = 70000, "localhost:70000" },
			wantErr{"spec.port", field.ErrorTypeInvalid}},
		"dataPath relative":       {func(r *gitops.OCIRegistry) { r.Spec.DataPath = "data/registry" }, wantErr{"spec.dataPath", field.ErrorTypeInvalid}},
		"dataPath not clean":      {func(r *gitops.OCIRegistry) { r.Spec.DataPath = "/var/lib/../registry" }, wantErr{"spec.dataPath", field.ErrorTypeInvalid}},
		"dataPath trailing slash": {func(r *gitops.OCIRegistry) { r.Spec.DataPath = "/var/lib/registry/" }, wantErr{"spec.dataPath", field.ErrorTypeInvalid}},
		"dataPath and volumeName": {func(r *gitops.OCIRegistry) { r.Spec.VolumeName = "data" }, wantErr{"spec.volumeName", field.ErrorTypeForbidden}},
		"volumeName not a label":  {func(r *gitops.OCIRegistry) { r.Spec.DataPath, r.Spec.VolumeName = "", "Data_1" }, wantErr{"spec.volumeName", field.ErrorTypeInvalid}},
		"keepVersions negative":   {func(r *gitops.OCIRegistry) { r.Spec.Retention.KeepVersions = -1 }, wantErr{"spec.retention.keepVersions", field.ErrorTypeInvalid}},
	}
	for name, tc := range cases {
		r := registry()
		tc.mutate(r)
		expectOne(t, name, ValidateOCIRegistry(r), tc.want)
	}
	// Without spec.port, the endpoint's port is checked there.
	r := registry()
	r.Spec.Port, r.Spec.Endpoint = 0, "localhost:80"
	errs := ValidateOCIRegistry(r)
	if len(errs) != 2 || errs[0].Field != "spec.port" || errs[1].Field != "spec.endpoint" || !strings.Contains(errs[1].Detail, "between 1024 and 65535") {
		t.Errorf("no port, endpoint localhost:80: %v", errs)
	}
}

func TestOCIRegistryUpdate(t *testing.T) {
	old := registry()
	changed := old.DeepCopy()
	changed.Spec.Retention.KeepVersions = 2
	changed.Spec.DeleteDataOnDelete = true
	if errs := ValidateOCIRegistryUpdate(changed, old); len(errs) > 0 {
		t.Fatalf("retention and deleteDataOnDelete change: %v", errs)
	}
	cases := map[string]struct {
		mutate func(*gitops.OCIRegistry)
		field  string
	}{
		"endpoint and port": {func(r *gitops.OCIRegistry) { r.Spec.Endpoint, r.Spec.Port = "localhost:5001", 5001 }, "spec.endpoint"},
		"dataPath":          {func(r *gitops.OCIRegistry) { r.Spec.DataPath = "/srv/registry" }, "spec.dataPath"},
		"volumeName":        {func(r *gitops.OCIRegistry) { r.Spec.DataPath, r.Spec.VolumeName = "", "data" }, "spec.dataPath"},
	}
	for name, tc := range cases {
		r := old.DeepCopy()
		tc.mutate(r)
		errs := ValidateOCIRegistryUpdate(r, old)
		if len(errs) == 0 || errs[0].Field != tc.field || !strings.Contains(errs[0].Detail, "immutable") {
			t.Errorf("%s: %v, want immutable on %s", name, errs, tc.field)
		}
	}
	// Both port fields are immutable on their own.
	r := old.DeepCopy()
	r.Spec.Endpoint, r.Spec.Port = "localhost:5001", 5001
	if errs := ValidateOCIRegistryUpdate(r, old); len(errs) != 2 || errs[1].Field != "spec.port" {
		t.Errorf("endpoint and port: %v", errs)
	}
	r = old.DeepCopy()
	r.Spec.DataPath, r.Spec.VolumeName = "", "data"
	if errs := ValidateOCIRegistryUpdate(r, old); len(errs) != 2 || errs[1].Field != "spec.volumeName" {
		t.Errorf("dataPath to volumeName: %v", errs)
	}
}

func TestOCIRegistryStatus(t *testing.T) {
	old := registry()
	ok := old.DeepCopy()
	ok.Status = gitops.OCIRegistryStatus{Phase: gitops.RegistryPhaseRunning, URL: "http://localhost:5000", StoragePath: "/var/lib/plinth/registry",
		ObservedGeneration: 1, Conditions: []metav1.Condition{{Type: gitops.ConditionReady, Status: metav1.ConditionTrue, Reason: "Serving", LastTransitionTime: metav1.Now()}}}
	if errs := ValidateOCIRegistryStatusUpdate(ok, old); len(errs) > 0 {
		t.Fatalf("valid status: %v", errs)
	}
	cases := map[string]struct {
		mutate func(*gitops.OCIRegistryStatus)
		want   wantErr
	}{
		"phase":              {func(s *gitops.OCIRegistryStatus) { s.Phase = "Up" }, wantErr{"status.phase", field.ErrorTypeNotSupported}},
		"url":                {func(s *gitops.OCIRegistryStatus) { s.URL = "localhost:5000" }, wantErr{"status.url", field.ErrorTypeInvalid}},
		"storagePath":        {func(s *gitops.OCIRegistryStatus) { s.StoragePath = "data" }, wantErr{"status.storagePath", field.ErrorTypeInvalid}},
		"observedGeneration": {func(s *gitops.OCIRegistryStatus) { s.ObservedGeneration = -1 }, wantErr{"status.observedGeneration", field.ErrorTypeInvalid}},
	}
	for name, tc := range cases {
		r := ok.DeepCopy()
		tc.mutate(&r.Status)
		expectOne(t, name, ValidateOCIRegistryStatusUpdate(r, old), tc.want)
	}
}

func raw(s string) common.RawObject { return common.RawObject{Raw: []byte(s)} }

const (
	configMapManifest  = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"app-config","namespace":"apps"},"data":{"color":"blue"}}`
	deploymentManifest = `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"app","namespace":"apps"},"spec":{}}`
)

func artifact() *gitops.OCIArtifact {
	return &gitops.OCIArtifact{
		ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "plinth-system", ResourceVersion: "1"},
		Spec: gitops.OCIArtifactSpec{
			RegistryRef: gitops.LocalObjectReference{Name: "local-registry"},
			Name:        "workloads/app",
			Repository:  "plinth/workloads/app",
			Version:     "1.0.3",
			Tag:         "1.0.3",
			Manifests:   []common.RawObject{raw(configMapManifest), raw(deploymentManifest)},
			Targets: []gitops.ArtifactTarget{
				{Cluster: "local", Namespace: "flux-system", TargetNamespace: "apps", Path: "./", Prune: ptr.To(true)},
				{Cluster: "edge", Namespace: "flux-system", Path: "."},
			},
		},
	}
}

func TestValidOCIArtifact(t *testing.T) {
	if errs := ValidateOCIArtifact(artifact()); len(errs) > 0 {
		t.Fatalf("valid artifact: %v", errs)
	}
	for _, v := range []string{"latest", "v1.2.0-rc.1", "2.0.0+build.5", "0.0.1-alpha.0"} {
		a := artifact()
		a.Spec.Version, a.Spec.Tag = v, strings.ReplaceAll(v, "+", "_")
		if errs := ValidateOCIArtifact(a); len(errs) > 0 {
			t.Errorf("version %s: %v", v, errs)
		}
	}
	fromConfigMap := artifact()
	fromConfigMap.Spec.Manifests = nil
	fromConfigMap.Spec.ConfigMapRef = &gitops.LocalObjectReference{Name: "app-manifests"}
	fromConfigMap.Spec.Targets = nil
	if errs := ValidateOCIArtifact(fromConfigMap); len(errs) > 0 {
		t.Fatalf("artifact from a ConfigMap without targets: %v", errs)
	}
	for _, p := range []string{"", ".", "./"} {
		a := artifact()
		a.Spec.Targets[1].Path = p
		if errs := ValidateOCIArtifact(a); len(errs) > 0 {
			t.Errorf("path %q: %v", p, errs)
		}
	}
	for _, repo := range []string{"app", "a/b/c", "my_team/app.v2", "team__a/app--x", strings.Repeat("a", 255)} {
		a := artifact()
		a.Spec.Repository = repo
		if errs := ValidateOCIArtifact(a); len(errs) > 0 {
			t.Errorf("repository %s: %v", repo, errs)
		}
	}
}

func TestOCIArtifactRules(t *testing.T) {
	cases := map[string]struct {
		mutate func(*gitops.OCIArtifact)
		want   wantErr
	}{
		"no registryRef":          {func(a *gitops.OCIArtifact) { a.Spec.RegistryRef.Name = "" }, wantErr{"spec.registryRef.name", field.ErrorTypeRequired}},
		"registryRef not a name":  {func(a *gitops.OCIArtifact) { a.Spec.RegistryRef.Name = "Local_Registry" }, wantErr{"spec.registryRef.name", field.ErrorTypeInvalid}},
		"no name":                 {func(a *gitops.OCIArtifact) { a.Spec.Name = "" }, wantErr{"spec.name", field.ErrorTypeRequired}},
		"name upper case":         {func(a *gitops.OCIArtifact) { a.Spec.Name = "Workloads/App" }, wantErr{"spec.name", field.ErrorTypeInvalid}},
		"name leading slash":      {func(a *gitops.OCIArtifact) { a.Spec.Name = "/workloads/app" }, wantErr{"spec.name", field.ErrorTypeInvalid}},
		"name empty component":    {func(a *gitops.OCIArtifact) { a.Spec.Name = "workloads//app" }, wantErr{"spec.name", field.ErrorTypeInvalid}},
		"no repository":           {func(a *gitops.OCIArtifact) { a.Spec.Repository = "" }, wantErr{"spec.repository", field.ErrorTypeRequired}},
		"repository with a tag":   {func(a *gitops.OCIArtifact) { a.Spec.Repository = "plinth/app:1.0" }, wantErr{"spec.repository", field.ErrorTypeInvalid}},
		"repository with a host":  {func(a *gitops.OCIArtifact) { a.Spec.Repository = "localhost:5000/app" }, wantErr{"spec.repository", field.ErrorTypeInvalid}},
		"repository separator":    {func(a *gitops.OCIArtifact) { a.Spec.Repository = "plinth/app-" }, wantErr{"spec.repository", field.ErrorTypeInvalid}},
		"repository too long":     {func(a *gitops.OCIArtifact) { a.Spec.Repository = strings.Repeat("a", 256) }, wantErr{"spec.repository", field.ErrorTypeInvalid}},
		"no version":              {func(a *gitops.OCIArtifact) { a.Spec.Version = "" }, wantErr{"spec.version", field.ErrorTypeRequired}},
		"version not semver":      {func(a *gitops.OCIArtifact) { a.Spec.Version = "1.0" }, wantErr{"spec.version", field.ErrorTypeInvalid}},
		"version word":            {func(a *gitops.OCIArtifact) { a.Spec.Version = "stable" }, wantErr{"spec.version", field.ErrorTypeInvalid}},
		"version Latest":          {func(a *gitops.OCIArtifact) { a.Spec.Version = "Latest" }, wantErr{"spec.version", field.ErrorTypeInvalid}},
		"version double v":        {func(a *gitops.OCIArtifact) { a.Spec.Version = "vv1.0.0" }, wantErr{"spec.version", field.ErrorTypeInvalid}},
		"version leading zero":    {func(a *gitops.OCIArtifact) { a.Spec.Version = "01.0.0" }, wantErr{"spec.version", field.ErrorTypeInvalid}},
		"no tag":                  {func(a *gitops.OCIArtifact) { a.Spec.Tag = "" }, wantErr{"spec.tag", field.ErrorTypeRequired}},
		"tag with +":              {func(a *gitops.OCIArtifact) { a.Spec.Tag = "1.0.3+b1" }, wantErr{"spec.tag", field.ErrorTypeInvalid}},
		"tag starting with .":     {func(a *gitops.OCIArtifact) { a.Spec.Tag = ".1" }, wantErr{"spec.tag", field.ErrorTypeInvalid}},
		"tag too long":            {func(a *gitops.OCIArtifact) { a.Spec.Tag = strings.Repeat("a", 129) }, wantErr{"spec.tag", field.ErrorTypeInvalid}},
		"manifests and configMap": {func(a *gitops.OCIArtifact) { a.Spec.ConfigMapRef = &gitops.LocalObjectReference{Name: "m"} }, wantErr{"spec.configMapRef", field.ErrorTypeForbidden}},
		"no content":              {func(a *gitops.OCIArtifact) { a.Spec.Manifests = nil }, wantErr{"spec.manifests", field.ErrorTypeRequired}},
		"configMapRef without name": {func(a *gitops.OCIArtifact) {
			a.Spec.Manifests, a.Spec.ConfigMapRef = nil, &gitops.LocalObjectReference{}
		}, wantErr{"spec.configMapRef.name", field.ErrorTypeRequired}},
		"manifest not an object": {func(a *gitops.OCIArtifact) { a.Spec.Manifests[1] = raw(`["a"]`) }, wantErr{"spec.manifests[1]", field.ErrorTypeInvalid}},
		"manifest without kind": {func(a *gitops.OCIArtifact) {
			a.Spec.Manifests[1] = raw(`{"apiVersion":"v1","metadata":{"name":"x"}}`)
		}, wantErr{"spec.manifests[1].kind", field.ErrorTypeRequired}},
		"manifest without name": {func(a *gitops.OCIArtifact) {
			a.Spec.Manifests[0] = raw(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{}}`)
		}, wantErr{"spec.manifests[0].metadata.name", field.ErrorTypeRequired}},
		"duplicate manifest":     {func(a *gitops.OCIArtifact) { a.Spec.Manifests[1] = raw(configMapManifest) }, wantErr{"spec.manifests[1]", field.ErrorTypeDuplicate}},
		"target without cluster": {func(a *gitops.OCIArtifact) { a.Spec.Targets[1].Cluster = "" }, wantErr{"spec.targets[1].cluster", field.ErrorTypeRequired}},
		"target cluster not a name": {func(a *gitops.OCIArtifact) { a.Spec.Targets[1].Cluster = "Edge" },
			wantErr{"spec.targets[1].cluster", field.ErrorTypeInvalid}},
		"duplicate target": {func(a *gitops.OCIArtifact) { a.Spec.Targets[1].Cluster = "local" }, wantErr{"spec.targets[1].cluster", field.ErrorTypeDuplicate}},
		"target namespace": {func(a *gitops.OCIArtifact) { a.Spec.Targets[0].Namespace = "flux.system" },
			wantErr{"spec.targets[0].namespace", field.ErrorTypeInvalid}},
		"targetNamespace": {func(a *gitops.OCIArtifact) { a.Spec.Targets[0].TargetNamespace = "Apps" },
			wantErr{"spec.targets[0].targetNamespace", field.ErrorTypeInvalid}},
		"absolute path": {func(a *gitops.OCIArtifact) { a.Spec.Targets[1].Path = "/base" }, wantErr{"spec.targets[1].path", field.ErrorTypeInvalid}},
		"root /":        {func(a *gitops.OCIArtifact) { a.Spec.Targets[1].Path = "/" }, wantErr{"spec.targets[1].path", field.ErrorTypeInvalid}},
		"path up":       {func(a *gitops.OCIArtifact) { a.Spec.Targets[1].Path = "./base/../../etc" }, wantErr{"spec.targets[1].path", field.ErrorTypeInvalid}},
		"path ..":       {func(a *gitops.OCIArtifact) { a.Spec.Targets[1].Path = ".." }, wantErr{"spec.targets[1].path", field.ErrorTypeInvalid}},
		// Artifacts are flat (manifests.ValidFileName): a directory would make Flux fail with
		// "path not found" while the Kubectl engine applied everything.
		"directory":            {func(a *gitops.OCIArtifact) { a.Spec.Targets[1].Path = "./base" }, wantErr{"spec.targets[1].path", field.ErrorTypeInvalid}},
		"directory without ./": {func(a *gitops.OCIArtifact) { a.Spec.Targets[1].Path = "base" }, wantErr{"spec.targets[1].path", field.ErrorTypeInvalid}},
		"root spelled .//":     {func(a *gitops.OCIArtifact) { a.Spec.Targets[1].Path = ".//" }, wantErr{"spec.targets[1].path", field.ErrorTypeInvalid}},
	}
	for name, tc := range cases {
		a := artifact()
		tc.mutate(a)
		expectOne(t, name, ValidateOCIArtifact(a), tc.want)
	}
	// Both problems of the list are reported, each at its own index.
	a := artifact()
	a.Spec.Manifests = []common.RawObject{raw(`"text"`), raw(configMapManifest), raw(`{"apiVersion":"v1","kind":"ConfigMap"}`)}
	errs := ValidateOCIArtifact(a)
	if len(errs) != 2 || errs[1].Field != "spec.manifests[2].metadata.name" {
		t.Errorf("a non-object and a nameless manifest: %v", errs)
	}
	tooMany := artifact()
	tooMany.Spec.Manifests = make([]common.RawObject, 1001)
	if errs := ValidateOCIArtifact(tooMany); len(errs) != 1 || errs[0].Field != "spec.manifests" || errs[0].Type != field.ErrorTypeTooMany {
		t.Errorf("1001 manifests: %v", errs)
	}
}

func TestOCIArtifactUpdate(t *testing.T) {
	old := artifact()
	newVersion := old.DeepCopy()
	newVersion.Spec.Version, newVersion.Spec.Tag = "1.1.0", "1.1.0"
	newVersion.Spec.Manifests = newVersion.Spec.Manifests[:1]
	newVersion.Spec.Targets = newVersion.Spec.Targets[:1]
	if errs := ValidateOCIArtifactUpdate(newVersion, old); len(errs) > 0 {
		t.Fatalf("a new version with new content and targets: %v", errs)
	}
	cases := map[string]struct {
		mutate func(*gitops.OCIArtifact)
		want   wantErr
	}{
		"registryRef":              {func(a *gitops.OCIArtifact) { a.Spec.RegistryRef.Name = "other" }, wantErr{"spec.registryRef", field.ErrorTypeInvalid}},
		"name":                     {func(a *gitops.OCIArtifact) { a.Spec.Name = "workloads/other" }, wantErr{"spec.name", field.ErrorTypeInvalid}},
		"repository":               {func(a *gitops.OCIArtifact) { a.Spec.Repository = "plinth/other" }, wantErr{"spec.repository", field.ErrorTypeInvalid}},
		"tag without version":      {func(a *gitops.OCIArtifact) { a.Spec.Tag = "stable" }, wantErr{"spec.tag", field.ErrorTypeInvalid}},
		"bad version on update":    {func(a *gitops.OCIArtifact) { a.Spec.Version, a.Spec.Tag = "next", "next" }, wantErr{"spec.version", field.ErrorTypeInvalid}},
		"second target duplicated": {func(a *gitops.OCIArtifact) { a.Spec.Targets[1].Cluster = "local" }, wantErr{"spec.targets[1].cluster", field.ErrorTypeDuplicate}},
	}
	for name, tc := range cases {
		a := old.DeepCopy()
		tc.mutate(a)
		expectOne(t, name, ValidateOCIArtifactUpdate(a, old), tc.want)
	}
}

// A target path stored before only the artifact's root was allowed stays valid while it is
// unchanged (so that the artifact can be updated and its finalizer released); a changed or a
// new target must use the root.
func TestOCIArtifactUpdateKeepsAStoredPath(t *testing.T) {
	old := artifact()
	old.Spec.Targets[1].Path = "./base"
	unchanged := old.DeepCopy()
	unchanged.Finalizers = []string{"gitops.plinth.dev/delivery"}
	if errs := ValidateOCIArtifactUpdate(unchanged, old); len(errs) > 0 {
		t.Errorf("an unchanged stored path: %v", errs)
	}
	changed := old.DeepCopy()
	changed.Spec.Targets[1].Path = "./overlays"
	expectOne(t, "a changed path", ValidateOCIArtifactUpdate(changed, old), wantErr{"spec.targets[1].path", field.ErrorTypeInvalid})
	moved := old.DeepCopy()
	moved.Spec.Targets[1].Cluster = "west"
	expectOne(t, "the path on another cluster", ValidateOCIArtifactUpdate(moved, old), wantErr{"spec.targets[1].path", field.ErrorTypeInvalid})
}

func pushedStatus() gitops.OCIArtifactStatus {
	return gitops.OCIArtifactStatus{
		RegistryEndpoint: "localhost:5000",
		URL:              "oci://localhost:5000/plinth/workloads/app:1.0.3",
		Digest:           "sha256:" + strings.Repeat("0123456789abcdef", 4),
		Revision:         "1.0.3@sha256:" + strings.Repeat("a", 64),
		PushedVersion:    "1.0.3",
		PushedAt:         ptr.To(metav1.Now()),
		Targets: []gitops.ArtifactTargetStatus{
			{Cluster: "local", Engine: "Flux", Ready: true, OCIRepository: "flux-system/app", Kustomization: "flux-system/app"},
			{Cluster: "edge", Engine: "Kubectl", Inventory: []gitops.InventoryEntry{{ID: "apps_app_apps_Deployment", Version: "v1"}}},
		},
		ObservedGeneration: 2,
	}
}

func TestOCIArtifactStatus(t *testing.T) {
	old := artifact()
	ok := old.DeepCopy()
	ok.Status = pushedStatus()
	if errs := ValidateOCIArtifactStatusUpdate(ok, old); len(errs) > 0 {
		t.Fatalf("valid status: %v", errs)
	}
	cases := map[string]struct {
		mutate func(*gitops.OCIArtifactStatus)
		want   wantErr
	}{
		"registryEndpoint":        {func(s *gitops.OCIArtifactStatus) { s.RegistryEndpoint = "registry:5000" }, wantErr{"status.registryEndpoint", field.ErrorTypeInvalid}},
		"url scheme":              {func(s *gitops.OCIArtifactStatus) { s.URL = "https://localhost:5000/plinth/workloads/app:1.0.3" }, wantErr{"status.url", field.ErrorTypeInvalid}},
		"url host":                {func(s *gitops.OCIArtifactStatus) { s.URL = "oci://registry.local:5000/plinth/workloads/app:1.0.3" }, wantErr{"status.url", field.ErrorTypeInvalid}},
		"url without tag":         {func(s *gitops.OCIArtifactStatus) { s.URL = "oci://localhost:5000/plinth/workloads/app" }, wantErr{"status.url", field.ErrorTypeInvalid}},
		"url on another registry": {func(s *gitops.OCIArtifactStatus) { s.URL = "oci://localhost:5001/plinth/workloads/app:1.0.3" }, wantErr{"status.url", field.ErrorTypeInvalid}},
		"url another repository":  {func(s *gitops.OCIArtifactStatus) { s.URL = "oci://localhost:5000/plinth/other:1.0.3" }, wantErr{"status.url", field.ErrorTypeInvalid}},
		"url with a digest": {func(s *gitops.OCIArtifactStatus) {
			s.URL = "oci://localhost:5000/plinth/workloads/app@sha256:" + strings.Repeat("a", 64)
		}, wantErr{"status.url", field.ErrorTypeInvalid}},
		"digest":             {func(s *gitops.OCIArtifactStatus) { s.Digest = "0123456789abcdef" }, wantErr{"status.digest", field.ErrorTypeInvalid}},
		"pushedVersion":      {func(s *gitops.OCIArtifactStatus) { s.PushedVersion = "one" }, wantErr{"status.pushedVersion", field.ErrorTypeInvalid}},
		"target cluster":     {func(s *gitops.OCIArtifactStatus) { s.Targets[1].Cluster = "" }, wantErr{"status.targets[1].cluster", field.ErrorTypeRequired}},
		"duplicate target":   {func(s *gitops.OCIArtifactStatus) { s.Targets[1].Cluster = "local" }, wantErr{"status.targets[1].cluster", field.ErrorTypeDuplicate}},
		"engine":             {func(s *gitops.OCIArtifactStatus) { s.Targets[0].Engine = "Argo" }, wantErr{"status.targets[0].engine", field.ErrorTypeNotSupported}},
		"observedGeneration": {func(s *gitops.OCIArtifactStatus) { s.ObservedGeneration = -2 }, wantErr{"status.observedGeneration", field.ErrorTypeInvalid}},
	}
	for name, tc := range cases {
		a := ok.DeepCopy()
		tc.mutate(&a.Status)
		expectOne(t, name, ValidateOCIArtifactStatusUpdate(a, old), tc.want)
	}
	// The status describes the last push: after a change of version its tag is the old one.
	moved := ok.DeepCopy()
	moved.Spec.Version, moved.Spec.Tag = "1.1.0", "1.1.0"
	if errs := ValidateOCIArtifactStatusUpdate(moved, moved); len(errs) > 0 {
		t.Errorf("status of the previous version: %v", errs)
	}
}

func TestValidateOCIURL(t *testing.T) {
	for _, u := range []string{
		"oci://localhost:5000/plinth/workloads/app",
		"oci://localhost:5000/plinth/workloads/app:1.0.3",
		"oci://localhost:65535/app:v1.2.0-rc.1",
		"oci://localhost:5000/" + strings.Repeat("a", 255),
	} {
		if err := ValidateOCIURL(u); err != nil {
			t.Errorf("%s: %v", u, err)
		}
	}
	for u, want := range map[string]string{
		"localhost:5000/app":                                         "must start with oci://",
		"http://localhost:5000/app":                                  "must start with oci://",
		"oci://localhost:5000":                                       "oci://localhost:<port>/<repository>",
		"oci://localhost:5000/":                                      "oci://localhost:<port>/<repository>",
		"oci://127.0.0.1:5000/app":                                   "the host must be localhost:<port>",
		"oci://example.com/app":                                      "the host must be localhost:<port>",
		"oci://localhost:80/app":                                     "the port must be between 1024 and 65535",
		"oci://localhost:5000/App":                                   "oci://localhost:<port>/<repository>",
		"oci://localhost:5000/app:bad+tag":                           "oci://localhost:<port>/<repository>",
		"oci://localhost:5000/app/":                                  "oci://localhost:<port>/<repository>",
		"oci://localhost:5000/app?x=1":                               "oci://localhost:<port>/<repository>",
		"oci://localhost:5000/" + strings.Repeat("a", 256):           "must not be more than 255 characters",
		"oci://localhost:5000/app@sha256:" + strings.Repeat("a", 64): "must name a tag, not a digest",
	} {
		err := ValidateOCIURL(u)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error containing %q", u, err, want)
		}
	}
}

func request() *gitops.ReconciliationRequest {
	return &gitops.ReconciliationRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "now", Namespace: "plinth-system", ResourceVersion: "1"},
		Spec: gitops.ReconciliationRequestSpec{
			Targets: []gitops.ReconciliationTarget{
				{Cluster: "local", Kind: gitops.TargetKindOCIRepository, Name: "app", Namespace: "flux-system"},
				{Cluster: "local", Kind: gitops.TargetKindKustomization, Name: "app", Namespace: "flux-system"},
				{Cluster: "edge", Kind: gitops.TargetKindOCIArtifact, Name: "app"},
			},
			Mode:        gitops.ReconciliationModeManual,
			RequestedAt: ptr.To(metav1.NewMicroTime(requestTime)),
			Timeout:     &metav1.Duration{Duration: 5 * time.Minute},
		},
	}
}

// requestTime is request()'s requestedAt and the server's time its validation is given.
var requestTime = time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)

func TestValidReconciliationRequest(t *testing.T) {
	if errs := ValidateReconciliationRequest(request(), requestTime); len(errs) > 0 {
		t.Fatalf("valid request: %v", errs)
	}
	// The same name in another namespace, kind or cluster is another target.
	r := request()
	r.Spec.Targets = append(r.Spec.Targets,
		gitops.ReconciliationTarget{Cluster: "local", Kind: gitops.TargetKindOCIRepository, Name: "app", Namespace: "apps"},
		gitops.ReconciliationTarget{Cluster: "edge", Kind: gitops.TargetKindOCIRepository, Name: "app", Namespace: "flux-system"})
	r.Spec.Mode, r.Spec.RequestedAt, r.Spec.Timeout = gitops.ReconciliationModeAutomatic, nil, &metav1.Duration{Duration: time.Hour}
	if errs := ValidateReconciliationRequest(r, requestTime); len(errs) > 0 {
		t.Fatalf("five targets, an hour: %v", errs)
	}
	// A revision to wait for, as plinth-controller sets on Automatic requests, up to the
	// longest allowed.
	r = request()
	r.Spec.Targets[0].Revision = "1.1.0@sha256:" + strings.Repeat("0f", 32)
	r.Spec.Targets[2].Revision = strings.Repeat("r", MaxTargetRevisionLength)
	if errs := ValidateReconciliationRequest(r, requestTime); len(errs) > 0 {
		t.Fatalf("targets with revisions: %v", errs)
	}
	// A client's clock may be a few minutes off the server's.
	for _, skew := range []time.Duration{-MaxRequestedAtSkew, MaxRequestedAtSkew} {
		r := request()
		r.Spec.RequestedAt = ptr.To(metav1.NewMicroTime(requestTime.Add(skew)))
		if errs := ValidateReconciliationRequest(r, requestTime); len(errs) > 0 {
			t.Errorf("requestedAt %s off the server's time: %v", skew, errs)
		}
	}
}

func TestReconciliationRequestRules(t *testing.T) {
	many := make([]gitops.ReconciliationTarget, 51)
	for i := range many {
		many[i] = gitops.ReconciliationTarget{Cluster: "local", Kind: gitops.TargetKindOCIArtifact, Name: fmt.Sprintf("a%d", i)}
	}
	cases := map[string]struct {
		mutate func(*gitops.ReconciliationRequest)
		want   wantErr
	}{
		"no targets":             {func(r *gitops.ReconciliationRequest) { r.Spec.Targets = nil }, wantErr{"spec.targets", field.ErrorTypeRequired}},
		"51 targets":             {func(r *gitops.ReconciliationRequest) { r.Spec.Targets = many }, wantErr{"spec.targets", field.ErrorTypeTooMany}},
		"target without cluster": {func(r *gitops.ReconciliationRequest) { r.Spec.Targets[0].Cluster = "" }, wantErr{"spec.targets[0].cluster", field.ErrorTypeRequired}},
		"target without kind":    {func(r *gitops.ReconciliationRequest) { r.Spec.Targets[0].Kind = "" }, wantErr{"spec.targets[0].kind", field.ErrorTypeRequired}},
		"HelmRelease":            {func(r *gitops.ReconciliationRequest) { r.Spec.Targets[0].Kind = "HelmRelease" }, wantErr{"spec.targets[0].kind", field.ErrorTypeNotSupported}},
		"target without name":    {func(r *gitops.ReconciliationRequest) { r.Spec.Targets[1].Name = "" }, wantErr{"spec.targets[1].name", field.ErrorTypeRequired}},
		"name not a name":        {func(r *gitops.ReconciliationRequest) { r.Spec.Targets[1].Name = "App_1" }, wantErr{"spec.targets[1].name", field.ErrorTypeInvalid}},
		"Kustomization namespace": {func(r *gitops.ReconciliationRequest) { r.Spec.Targets[1].Namespace = "Flux_System" },
			wantErr{"spec.targets[1].namespace", field.ErrorTypeInvalid}},
		"OCIArtifact with a namespace": {func(r *gitops.ReconciliationRequest) { r.Spec.Targets[2].Namespace = "flux-system" },
			wantErr{"spec.targets[2].namespace", field.ErrorTypeForbidden}},
		"duplicate target": {func(r *gitops.ReconciliationRequest) { r.Spec.Targets[1].Kind = gitops.TargetKindOCIRepository },
			wantErr{"spec.targets[1]", field.ErrorTypeDuplicate}},
		"no mode":          {func(r *gitops.ReconciliationRequest) { r.Spec.Mode = "" }, wantErr{"spec.mode", field.ErrorTypeRequired}},
		"mode":             {func(r *gitops.ReconciliationRequest) { r.Spec.Mode = "Now" }, wantErr{"spec.mode", field.ErrorTypeNotSupported}},
		"no timeout":       {func(r *gitops.ReconciliationRequest) { r.Spec.Timeout = nil }, wantErr{"spec.timeout", field.ErrorTypeRequired}},
		"zero timeout":     {func(r *gitops.ReconciliationRequest) { r.Spec.Timeout.Duration = 0 }, wantErr{"spec.timeout", field.ErrorTypeInvalid}},
		"negative timeout": {func(r *gitops.ReconciliationRequest) { r.Spec.Timeout.Duration = -time.Second }, wantErr{"spec.timeout", field.ErrorTypeInvalid}},
		"timeout above 1h": {func(r *gitops.ReconciliationRequest) { r.Spec.Timeout.Duration = time.Hour + time.Second }, wantErr{"spec.timeout", field.ErrorTypeInvalid}},
		"requestedAt far in the future": {func(r *gitops.ReconciliationRequest) {
			r.Spec.RequestedAt = ptr.To(metav1.NewMicroTime(requestTime.Add(MaxRequestedAtSkew + time.Second)))
		}, wantErr{"spec.requestedAt", field.ErrorTypeInvalid}},
		"requestedAt far in the past": {func(r *gitops.ReconciliationRequest) {
			r.Spec.RequestedAt = ptr.To(metav1.NewMicroTime(requestTime.Add(-MaxRequestedAtSkew - time.Second)))
		}, wantErr{"spec.requestedAt", field.ErrorTypeInvalid}},
		"revision too long": {func(r *gitops.ReconciliationRequest) {
			r.Spec.Targets[0].Revision = "1.1.0@sha256:" + strings.Repeat("a", MaxTargetRevisionLength)
		}, wantErr{"spec.targets[0].revision", field.ErrorTypeTooLong}},
		"revision with a space": {func(r *gitops.ReconciliationRequest) { r.Spec.Targets[1].Revision = "1.1.0 @sha256:abc" },
			wantErr{"spec.targets[1].revision", field.ErrorTypeInvalid}},
		"revision with a newline": {func(r *gitops.ReconciliationRequest) { r.Spec.Targets[2].Revision = "1.1.0@sha256:abc\n" },
			wantErr{"spec.targets[2].revision", field.ErrorTypeInvalid}},
	}
	for name, tc := range cases {
		r := request()
		tc.mutate(r)
		expectOne(t, name, ValidateReconciliationRequest(r, requestTime), tc.want)
	}
}

func TestReconciliationRequestSpecIsImmutable(t *testing.T) {
	old := request()
	relabelled := old.DeepCopy()
	relabelled.Labels = map[string]string{"team": "a"}
	if errs := ValidateReconciliationRequestUpdate(relabelled, old); len(errs) > 0 {
		t.Fatalf("a label change: %v", errs)
	}
	for name, mutate := range map[string]func(*gitops.ReconciliationRequest){
		"mode":        func(r *gitops.ReconciliationRequest) { r.Spec.Mode = gitops.ReconciliationModeAutomatic },
		"requestedAt": func(r *gitops.ReconciliationRequest) { r.Spec.RequestedAt = ptr.To(metav1.NewMicroTime(time.Now())) },
		"targets":     func(r *gitops.ReconciliationRequest) { r.Spec.Targets = r.Spec.Targets[:1] },
		"timeout":     func(r *gitops.ReconciliationRequest) { r.Spec.Timeout.Duration = time.Minute },
	} {
		r := old.DeepCopy()
		mutate(r)
		expectOne(t, name, ValidateReconciliationRequestUpdate(r, old), wantErr{"spec", field.ErrorTypeForbidden})
	}
}

func TestReconciliationRequestStatus(t *testing.T) {
	old := request()
	ok := old.DeepCopy()
	ok.Status = gitops.ReconciliationRequestStatus{
		Phase: gitops.ReconciliationInProgress,
		Targets: []gitops.ReconciliationTargetStatus{
			{Cluster: "local", Kind: gitops.TargetKindOCIRepository, Name: "app", Namespace: "flux-system", HandledAt: ptr.To(metav1.Now()), Ready: true},
		},
		ObservedGeneration: 1,
	}
	if errs := ValidateReconciliationRequestStatusUpdate(ok, old); len(errs) > 0 {
		t.Fatalf("valid status: %v", errs)
	}
	extra := ok.Status.Targets[0]
	cases := map[string]struct {
		mutate func(*gitops.ReconciliationRequestStatus)
		want   wantErr
	}{
		"phase":              {func(s *gitops.ReconciliationRequestStatus) { s.Phase = "Done" }, wantErr{"status.phase", field.ErrorTypeNotSupported}},
		"cluster":            {func(s *gitops.ReconciliationRequestStatus) { s.Targets[0].Cluster = "" }, wantErr{"status.targets[0].cluster", field.ErrorTypeRequired}},
		"kind":               {func(s *gitops.ReconciliationRequestStatus) { s.Targets[0].Kind = "Pod" }, wantErr{"status.targets[0].kind", field.ErrorTypeNotSupported}},
		"name":               {func(s *gitops.ReconciliationRequestStatus) { s.Targets[0].Name = "" }, wantErr{"status.targets[0].name", field.ErrorTypeRequired}},
		"observedGeneration": {func(s *gitops.ReconciliationRequestStatus) { s.ObservedGeneration = -1 }, wantErr{"status.observedGeneration", field.ErrorTypeInvalid}},
		"more targets than the spec": {func(s *gitops.ReconciliationRequestStatus) {
			s.Targets = append(s.Targets, extra, extra, extra)
		}, wantErr{"status.targets", field.ErrorTypeTooMany}},
	}
	for name, tc := range cases {
		r := ok.DeepCopy()
		tc.mutate(&r.Status)
		expectOne(t, name, ValidateReconciliationRequestStatusUpdate(r, old), tc.want)
	}
}
