package validation

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/plinth-dev/plinth/pkg/apis/common"
	"github.com/plinth-dev/plinth/pkg/apis/infrastructure"
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

func raw(s string) common.RawObject { return common.RawObject{Raw: []byte(s)} }

const (
	configMapManifest  = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"ingress-config","namespace":"ingress"},"data":{"color":"blue"}}`
	deploymentManifest = `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"ingress","namespace":"ingress"},"spec":{}}`
	namespaceManifest  = `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"ingress"}}`
)

// caPEM is a self-signed CA certificate, PEM-encoded, for spec.chart.caBundle.
func caPEM(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "charts CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// chartPack is a valid pack of a Helm chart with values, every optional field set.
func chartPack() *infrastructure.InfrastructureClusterPack {
	return &infrastructure.InfrastructureClusterPack{
		ObjectMeta: metav1.ObjectMeta{Name: "cert-manager", Namespace: "plinth-system", ResourceVersion: "1"},
		Spec: infrastructure.InfrastructureClusterPackSpec{
			Version:              "v1.4.0-r2",
			Chart:                &infrastructure.PackChart{URL: "https://charts.example.com/stable", Name: "cert-manager", Version: ">=1.2.0 <2"},
			Values:               &common.RawObject{Raw: []byte(`{"replicaCount":2,"installCRDs":true}`)},
			TargetNamespace:      "cert-manager",
			TargetClusters:       []string{"local", "edge"},
			ClusterSelector:      &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}},
			DependsOn:            []string{"crds"},
			DependencyPolicy:     &infrastructure.DependencyPolicy{OnDrift: infrastructure.OnDriftBlock},
			DriftPolicy:          infrastructure.DriftPolicyCorrect,
			LifecyclePolicies:    &infrastructure.LifecyclePolicies{RetainOnDeletion: true},
			RollbackToRevision:   ptr.To[int64](3),
			RevisionHistoryLimit: ptr.To[int32](MaxRevisionHistoryLimit),
		},
	}
}

// kustomizePack is a valid pack of a kustomize directory in a ConfigMap.
func kustomizePack() *infrastructure.InfrastructureClusterPack {
	return &infrastructure.InfrastructureClusterPack{
		ObjectMeta: metav1.ObjectMeta{Name: "ingress", Namespace: "plinth-system", ResourceVersion: "1"},
		Spec: infrastructure.InfrastructureClusterPackSpec{
			Version:        "v0.3.1",
			Kustomize:      &infrastructure.PackKustomize{ConfigMapRef: &infrastructure.LocalObjectReference{Name: "ingress-kustomize"}, Path: "overlays/prod"},
			TargetClusters: []string{"local"},
		},
	}
}

// rawPack is a valid pack of inline manifests, targeted by a selector alone.
func rawPack() *infrastructure.InfrastructureClusterPack {
	return &infrastructure.InfrastructureClusterPack{
		ObjectMeta: metav1.ObjectMeta{Name: "ingress-raw", Namespace: "plinth-system", ResourceVersion: "1"},
		Spec: infrastructure.InfrastructureClusterPackSpec{
			Version:         "v2.0.0",
			Manifests:       []common.RawObject{raw(namespaceManifest), raw(configMapManifest), raw(deploymentManifest)},
			ClusterSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"edge"}}}},
		},
	}
}

func TestValidPacks(t *testing.T) {
	for name, p := range map[string]*infrastructure.InfrastructureClusterPack{
		"chart": chartPack(), "kustomize": kustomizePack(), "manifests": rawPack(),
	} {
		if errs := ValidateInfrastructureClusterPack(p); len(errs) > 0 {
			t.Errorf("valid %s pack: %v", name, errs)
		}
	}
	oci := chartPack()
	oci.Spec.Chart = &infrastructure.PackChart{URL: "oci://localhost:5000/charts", Name: "cert-manager", Version: "1.14.5", CABundle: caPEM(t)}
	oci.Spec.Values = nil
	if errs := ValidateInfrastructureClusterPack(oci); len(errs) > 0 {
		t.Errorf("an OCI chart with a CA bundle: %v", errs)
	}
	fromArtifact := kustomizePack()
	fromArtifact.Spec.Kustomize = &infrastructure.PackKustomize{ArtifactRef: &infrastructure.LocalObjectReference{Name: "ingress"}}
	if errs := ValidateInfrastructureClusterPack(fromArtifact); len(errs) > 0 {
		t.Errorf("kustomize from an OCIArtifact at its root: %v", errs)
	}
	for _, v := range []string{"v0.0.0", "v1.0.0-r1", "v10.20.30-r400"} {
		p := rawPack()
		p.Spec.Version = v
		if errs := ValidateInfrastructureClusterPack(p); len(errs) > 0 {
			t.Errorf("version %s: %v", v, errs)
		}
	}
	for _, dir := range []string{".", "./", "base/..", "overlays/prod/"} {
		p := kustomizePack()
		p.Spec.Kustomize.Path = dir
		if errs := ValidateInfrastructureClusterPack(p); len(errs) > 0 {
			t.Errorf("kustomize path %q: %v", dir, errs)
		}
	}
	longest := rawPack()
	longest.Spec.TargetClusters = []string{strings.Repeat("c", MaxClusterNameLength)}
	if errs := ValidateInfrastructureClusterPack(longest); len(errs) > 0 {
		t.Errorf("a %d-character cluster name: %v", MaxClusterNameLength, errs)
	}
	empty := chartPack()
	empty.Spec.Values = &common.RawObject{}
	if errs := ValidateInfrastructureClusterPack(empty); len(errs) > 0 {
		t.Errorf("empty values: %v", errs)
	}
}

func TestPackRules(t *testing.T) {
	type pack = infrastructure.InfrastructureClusterPack
	cases := map[string]struct {
		base   func() *pack
		mutate func(*pack)
		want   wantErr
	}{
		"name not a DNS label": {chartPack, func(p *pack) { p.Name = "cert.manager" }, wantErr{"metadata.name", field.ErrorTypeInvalid}},
		"no version":           {chartPack, func(p *pack) { p.Spec.Version = "" }, wantErr{"spec.version", field.ErrorTypeRequired}},
		"version without v":    {chartPack, func(p *pack) { p.Spec.Version = "1.0.0" }, wantErr{"spec.version", field.ErrorTypeInvalid}},
		"version of two parts": {chartPack, func(p *pack) { p.Spec.Version = "v1.0" }, wantErr{"spec.version", field.ErrorTypeInvalid}},
		"version pre-release":  {chartPack, func(p *pack) { p.Spec.Version = "v1.0.0-x1" }, wantErr{"spec.version", field.ErrorTypeInvalid}},
		"version revision 0":   {chartPack, func(p *pack) { p.Spec.Version = "v1.0.0-r0" }, wantErr{"spec.version", field.ErrorTypeInvalid}},
		"no content": {chartPack, func(p *pack) { p.Spec.Chart, p.Spec.Values = nil, nil },
			wantErr{"spec", field.ErrorTypeRequired}},
		"chart and manifests": {chartPack, func(p *pack) { p.Spec.Manifests = []common.RawObject{raw(configMapManifest)} },
			wantErr{"spec", field.ErrorTypeInvalid}},
		"kustomize and manifests": {kustomizePack, func(p *pack) { p.Spec.Manifests = []common.RawObject{raw(configMapManifest)} },
			wantErr{"spec", field.ErrorTypeInvalid}},
		"values without chart": {kustomizePack, func(p *pack) { p.Spec.Values = &common.RawObject{Raw: []byte(`{"a":1}`)} },
			wantErr{"spec.values", field.ErrorTypeForbidden}},
		"values a list":   {chartPack, func(p *pack) { p.Spec.Values = &common.RawObject{Raw: []byte(`[1,2]`)} }, wantErr{"spec.values", field.ErrorTypeInvalid}},
		"values a string": {chartPack, func(p *pack) { p.Spec.Values = &common.RawObject{Raw: []byte(`"a: 1"`)} }, wantErr{"spec.values", field.ErrorTypeInvalid}},
		"no chart url":    {chartPack, func(p *pack) { p.Spec.Chart.URL = "" }, wantErr{"spec.chart.url", field.ErrorTypeRequired}},
		"chart url http":  {chartPack, func(p *pack) { p.Spec.Chart.URL = "http://charts.example.com" }, wantErr{"spec.chart.url", field.ErrorTypeInvalid}},
		"chart url without host": {chartPack, func(p *pack) { p.Spec.Chart.URL = "oci:///charts" },
			wantErr{"spec.chart.url", field.ErrorTypeInvalid}},
		"chart url a path":      {chartPack, func(p *pack) { p.Spec.Chart.URL = "charts/stable" }, wantErr{"spec.chart.url", field.ErrorTypeInvalid}},
		"chart url unparsable":  {chartPack, func(p *pack) { p.Spec.Chart.URL = "https://charts.example.com/%zz" }, wantErr{"spec.chart.url", field.ErrorTypeInvalid}},
		"chart url credentials": {chartPack, func(p *pack) { p.Spec.Chart.URL = "https://bot:s3cret@charts.example.com" }, wantErr{"spec.chart.url", field.ErrorTypeInvalid}},
		"chart url a query":     {chartPack, func(p *pack) { p.Spec.Chart.URL = "https://charts.example.com/stable?token=s3cret" }, wantErr{"spec.chart.url", field.ErrorTypeInvalid}},
		"chart url a fragment":  {chartPack, func(p *pack) { p.Spec.Chart.URL = "https://charts.example.com/stable#s3cret" }, wantErr{"spec.chart.url", field.ErrorTypeInvalid}},
		"no chart name":         {chartPack, func(p *pack) { p.Spec.Chart.Name = "" }, wantErr{"spec.chart.name", field.ErrorTypeRequired}},
		"chart name with /":     {chartPack, func(p *pack) { p.Spec.Chart.Name = "jetstack/cert-manager" }, wantErr{"spec.chart.name", field.ErrorTypeInvalid}},
		"chart name with a tag": {chartPack, func(p *pack) { p.Spec.Chart.Name = "cert-manager:1.14" }, wantErr{"spec.chart.name", field.ErrorTypeInvalid}},
		"chart name too long":   {chartPack, func(p *pack) { p.Spec.Chart.Name = strings.Repeat("c", 251) }, wantErr{"spec.chart.name", field.ErrorTypeInvalid}},
		"no chart version":      {chartPack, func(p *pack) { p.Spec.Chart.Version = "" }, wantErr{"spec.chart.version", field.ErrorTypeRequired}},
		"bad semver constraint": {chartPack, func(p *pack) { p.Spec.Chart.Version = ">=1.2.0 <<2" }, wantErr{"spec.chart.version", field.ErrorTypeInvalid}},
		"chart version a word":  {chartPack, func(p *pack) { p.Spec.Chart.Version = "latest" }, wantErr{"spec.chart.version", field.ErrorTypeInvalid}},
		"caBundle not PEM":      {chartPack, func(p *pack) { p.Spec.Chart.CABundle = []byte("not a certificate") }, wantErr{"spec.chart.caBundle", field.ErrorTypeInvalid}},
		"caBundle a key, not a certificate": {chartPack, func(p *pack) {
			p.Spec.Chart.CABundle = pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte{1, 2, 3}})
		}, wantErr{"spec.chart.caBundle", field.ErrorTypeInvalid}},
		"kustomize with both refs": {kustomizePack, func(p *pack) { p.Spec.Kustomize.ArtifactRef = &infrastructure.LocalObjectReference{Name: "ingress"} },
			wantErr{"spec.kustomize", field.ErrorTypeInvalid}},
		"kustomize with neither ref": {kustomizePack, func(p *pack) { p.Spec.Kustomize.ConfigMapRef = nil }, wantErr{"spec.kustomize", field.ErrorTypeRequired}},
		"configMapRef without name": {kustomizePack, func(p *pack) { p.Spec.Kustomize.ConfigMapRef.Name = "" },
			wantErr{"spec.kustomize.configMapRef.name", field.ErrorTypeRequired}},
		"artifactRef not a name": {kustomizePack, func(p *pack) {
			p.Spec.Kustomize.ConfigMapRef, p.Spec.Kustomize.ArtifactRef = nil, &infrastructure.LocalObjectReference{Name: "Ingress_1"}
		}, wantErr{"spec.kustomize.artifactRef.name", field.ErrorTypeInvalid}},
		"kustomize path ../x":       {kustomizePack, func(p *pack) { p.Spec.Kustomize.Path = "../x" }, wantErr{"spec.kustomize.path", field.ErrorTypeInvalid}},
		"kustomize path up and out": {kustomizePack, func(p *pack) { p.Spec.Kustomize.Path = "base/../../x" }, wantErr{"spec.kustomize.path", field.ErrorTypeInvalid}},
		"kustomize path absolute":   {kustomizePack, func(p *pack) { p.Spec.Kustomize.Path = "/etc" }, wantErr{"spec.kustomize.path", field.ErrorTypeInvalid}},
		"raw Secret": {rawPack, func(p *pack) {
			p.Spec.Manifests[1] = raw(`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"token","namespace":"ingress"},"stringData":{"token":"s3cret"}}`)
		}, wantErr{"spec.manifests[1].kind", field.ErrorTypeForbidden}},
		"raw object without kind": {rawPack, func(p *pack) { p.Spec.Manifests[2] = raw(`{"apiVersion":"v1","metadata":{"name":"x"}}`) },
			wantErr{"spec.manifests[2].kind", field.ErrorTypeRequired}},
		"raw object without name": {rawPack, func(p *pack) { p.Spec.Manifests[0] = raw(`{"apiVersion":"v1","kind":"Namespace","metadata":{}}`) },
			wantErr{"spec.manifests[0].metadata.name", field.ErrorTypeRequired}},
		"raw object a list": {rawPack, func(p *pack) { p.Spec.Manifests[0] = raw(`[{"apiVersion":"v1"}]`) }, wantErr{"spec.manifests[0]", field.ErrorTypeInvalid}},
		"duplicate raw objects": {rawPack, func(p *pack) { p.Spec.Manifests = append(p.Spec.Manifests, raw(configMapManifest)) },
			wantErr{"spec.manifests[3]", field.ErrorTypeDuplicate}},
		"targetNamespace not a label": {chartPack, func(p *pack) { p.Spec.TargetNamespace = "Cert_Manager" }, wantErr{"spec.targetNamespace", field.ErrorTypeInvalid}},
		"no targets": {chartPack, func(p *pack) { p.Spec.TargetClusters, p.Spec.ClusterSelector = nil, nil },
			wantErr{"spec.targetClusters", field.ErrorTypeRequired}},
		"cluster name too long": {chartPack, func(p *pack) { p.Spec.TargetClusters[1] = strings.Repeat("c", MaxClusterNameLength+1) },
			wantErr{"spec.targetClusters[1]", field.ErrorTypeTooLong}},
		"cluster name not a label": {chartPack, func(p *pack) { p.Spec.TargetClusters[1] = "Edge_1" }, wantErr{"spec.targetClusters[1]", field.ErrorTypeInvalid}},
		"empty cluster name":       {chartPack, func(p *pack) { p.Spec.TargetClusters[1] = "" }, wantErr{"spec.targetClusters[1]", field.ErrorTypeRequired}},
		"duplicate targetClusters": {chartPack, func(p *pack) { p.Spec.TargetClusters = []string{"local", "edge", "local"} },
			wantErr{"spec.targetClusters[2]", field.ErrorTypeDuplicate}},
		"too many targetClusters": {chartPack, func(p *pack) {
			p.Spec.TargetClusters = nil
			for i := 0; i <= MaxTargets; i++ {
				p.Spec.TargetClusters = append(p.Spec.TargetClusters, "c"+strings.Repeat("x", i%40)+string(rune('a'+i%26))+string(rune('a'+i/26)))
			}
		}, wantErr{"spec.targetClusters", field.ErrorTypeTooMany}},
		"clusterSelector bad operator": {chartPack, func(p *pack) {
			p.Spec.ClusterSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "env", Operator: "Like", Values: []string{"prod"}}}}
		}, wantErr{"spec.clusterSelector.matchExpressions[0].operator", field.ErrorTypeInvalid}},
		"clusterSelector bad label key": {chartPack, func(p *pack) {
			p.Spec.ClusterSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"env!": "prod"}}
		},
			wantErr{"spec.clusterSelector.matchLabels", field.ErrorTypeInvalid}},
		"dependsOn itself":          {chartPack, func(p *pack) { p.Spec.DependsOn = []string{"crds", "cert-manager"} }, wantErr{"spec.dependsOn[1]", field.ErrorTypeInvalid}},
		"dependsOn twice":           {chartPack, func(p *pack) { p.Spec.DependsOn = []string{"crds", "crds"} }, wantErr{"spec.dependsOn[1]", field.ErrorTypeDuplicate}},
		"dependsOn not a pack name": {chartPack, func(p *pack) { p.Spec.DependsOn = []string{"crds.v1"} }, wantErr{"spec.dependsOn[0]", field.ErrorTypeInvalid}},
		"onDrift Stop": {chartPack, func(p *pack) { p.Spec.DependencyPolicy.OnDrift = "Stop" },
			wantErr{"spec.dependencyPolicy.onDrift", field.ErrorTypeNotSupported}},
		"onDrift lower case": {chartPack, func(p *pack) { p.Spec.DependencyPolicy.OnDrift = "block" },
			wantErr{"spec.dependencyPolicy.onDrift", field.ErrorTypeNotSupported}},
		"driftPolicy Repair":    {chartPack, func(p *pack) { p.Spec.DriftPolicy = "Repair" }, wantErr{"spec.driftPolicy", field.ErrorTypeNotSupported}},
		"rollbackToRevision 0":  {chartPack, func(p *pack) { p.Spec.RollbackToRevision = ptr.To[int64](0) }, wantErr{"spec.rollbackToRevision", field.ErrorTypeInvalid}},
		"rollbackToRevision -1": {chartPack, func(p *pack) { p.Spec.RollbackToRevision = ptr.To[int64](-1) }, wantErr{"spec.rollbackToRevision", field.ErrorTypeInvalid}},
		"revisionHistoryLimit 0": {chartPack, func(p *pack) { p.Spec.RevisionHistoryLimit = ptr.To[int32](0) },
			wantErr{"spec.revisionHistoryLimit", field.ErrorTypeInvalid}},
		"revisionHistoryLimit 101": {chartPack, func(p *pack) { p.Spec.RevisionHistoryLimit = ptr.To[int32](MaxRevisionHistoryLimit + 1) },
			wantErr{"spec.revisionHistoryLimit", field.ErrorTypeInvalid}},
	}
	for name, tc := range cases {
		p := tc.base()
		tc.mutate(p)
		expectOne(t, name, ValidateInfrastructureClusterPack(p), tc.want)
		// The spec rules hold on every update too: a spec change is a new delivery.
		old := tc.base()
		p.ResourceVersion, p.Name = old.ResourceVersion, old.Name
		if name != "name not a DNS label" {
			expectOne(t, name+" (update)", ValidateInfrastructureClusterPackUpdate(p, old), tc.want)
		}
	}
	// A pack with several faults gets each at its own path.
	p := rawPack()
	p.Spec.Version = "v1"
	p.Spec.Manifests = append(p.Spec.Manifests, raw(`"text"`))
	p.Spec.DriftPolicy = "Stop"
	errs := ValidateInfrastructureClusterPack(p)
	var got []string
	for _, e := range errs {
		got = append(got, e.Field)
	}
	if strings.Join(got, " ") != "spec.version spec.manifests[3] spec.driftPolicy" {
		t.Errorf("three faults: %v", errs)
	}
}

// A refused chart URL is echoed in the 422 and in the audit log: a password or a token in it
// must not be.
func TestChartURLCredentialsAreNotEchoed(t *testing.T) {
	for _, u := range []string{
		"https://bot:s3cret@charts.example.com/stable",
		"http://bot:s3cret@charts.example.com/stable",
		"oci://bot:s3cret@localhost:5000/charts",
		"https://charts.example.com/stable?token=s3cret",
		"https://charts.example.com/stable#s3cret",
		"https://bot:s3cret@charts.example.com/%zz",
	} {
		p := chartPack()
		p.Spec.Chart.URL = u
		errs := ValidateInfrastructureClusterPack(p)
		if len(errs) != 1 || errs[0].Field != "spec.chart.url" {
			t.Errorf("%s: %v", u, errs)
			continue
		}
		if msg := errs.ToAggregate().Error(); strings.Contains(msg, "s3cret") {
			t.Errorf("%s: the refusal repeats the secret: %s", u, msg)
		}
	}
	p := chartPack()
	p.Spec.Chart.URL = "https://bot:s3cret@charts.example.com/stable"
	if errs := ValidateInfrastructureClusterPack(p); errs[0].BadValue != "https://bot:xxxxx@charts.example.com/stable" || !strings.Contains(errs[0].Detail, "credentials") {
		t.Errorf("credentials: %#v", errs[0])
	}
}

func TestTooManyManifests(t *testing.T) {
	p := rawPack()
	p.Spec.Manifests = make([]common.RawObject, 1001)
	if errs := ValidateInfrastructureClusterPack(p); len(errs) != 1 || errs[0].Field != "spec.manifests" || errs[0].Type != field.ErrorTypeTooMany {
		t.Errorf("1001 manifests: %v", errs)
	}
}

func TestPackUpdate(t *testing.T) {
	old := chartPack()
	next := old.DeepCopy()
	next.Spec.Version = "v1.5.0"
	next.Spec.Chart.Version = "1.15.0"
	next.Spec.TargetClusters = []string{"edge"}
	next.Spec.DriftPolicy = infrastructure.DriftPolicyDetect
	if errs := ValidateInfrastructureClusterPackUpdate(next, old); len(errs) > 0 {
		t.Errorf("a new version for fewer clusters: %v", errs)
	}
	toRaw := old.DeepCopy()
	toRaw.Spec.Chart, toRaw.Spec.Values = nil, nil
	toRaw.Spec.Manifests = []common.RawObject{raw(namespaceManifest)}
	if errs := ValidateInfrastructureClusterPackUpdate(toRaw, old); len(errs) > 0 {
		t.Errorf("a chart pack turned raw: %v", errs)
	}
	renamed := old.DeepCopy()
	renamed.Name = "issuer"
	expectOne(t, "renamed", ValidateInfrastructureClusterPackUpdate(renamed, old), wantErr{"metadata.name", field.ErrorTypeInvalid})
}

func TestPackStatus(t *testing.T) {
	old := chartPack()
	ok := old.DeepCopy()
	now := metav1.Now()
	ok.Status = infrastructure.InfrastructureClusterPackStatus{
		ObservedGeneration: 2, Revision: 3, Version: "v1.4.0-r2", Digest: "sha256:abc", HelmVersion: "v3.22.0", ChartVersion: "1.14.5",
		History: []infrastructure.PackRevision{{Revision: 3, Version: "v1.4.0-r2", RenderedAt: now}, {Revision: 2, Version: "v1.4.0", RenderedAt: now}},
		Summary: infrastructure.PackSummary{Ready: 1, Unreachable: 1},
		Clusters: []infrastructure.PackClusterStatus{{Cluster: "local", Phase: infrastructure.ClusterPhaseReady, Revision: 3},
			{Cluster: "edge", Phase: infrastructure.ClusterPhaseUnreachable, Message: "The cluster did not answer."}},
		Conditions: []metav1.Condition{{Type: infrastructure.ConditionRendered, Status: metav1.ConditionTrue, Reason: "Rendered", LastTransitionTime: now}},
	}
	if errs := ValidateInfrastructureClusterPackStatusUpdate(ok, old); len(errs) > 0 {
		t.Fatalf("valid status: %v", errs)
	}
	type status = infrastructure.InfrastructureClusterPackStatus
	cases := map[string]struct {
		mutate func(*status)
		want   wantErr
	}{
		"observedGeneration":   {func(s *status) { s.ObservedGeneration = -1 }, wantErr{"status.observedGeneration", field.ErrorTypeInvalid}},
		"revision":             {func(s *status) { s.Revision = -1 }, wantErr{"status.revision", field.ErrorTypeInvalid}},
		"version":              {func(s *status) { s.Version = "1.4.0" }, wantErr{"status.version", field.ErrorTypeInvalid}},
		"cluster without name": {func(s *status) { s.Clusters[1].Cluster = "" }, wantErr{"status.clusters[1].cluster", field.ErrorTypeRequired}},
		"cluster phase":        {func(s *status) { s.Clusters[0].Phase = "Up" }, wantErr{"status.clusters[0].phase", field.ErrorTypeNotSupported}},
		"cluster without phase": {func(s *status) { s.Clusters[0].Phase = "" },
			wantErr{"status.clusters[0].phase", field.ErrorTypeRequired}},
		"history revision 0": {func(s *status) { s.History[1].Revision = 0 }, wantErr{"status.history[1].revision", field.ErrorTypeInvalid}},
		"history version":    {func(s *status) { s.History[0].Version = "" }, wantErr{"status.history[0].version", field.ErrorTypeRequired}},
		"condition without reason": {func(s *status) { s.Conditions[0].Reason = "" },
			wantErr{"status.conditions[0].reason", field.ErrorTypeRequired}},
	}
	for name, tc := range cases {
		p := ok.DeepCopy()
		tc.mutate(&p.Status)
		expectOne(t, name, ValidateInfrastructureClusterPackStatusUpdate(p, old), tc.want)
	}
}

// instance is a valid instance of chartPack on cluster local, as plinth-controller writes it.
func instance() *infrastructure.InfrastructurePackInstance {
	return &infrastructure.InfrastructurePackInstance{
		ObjectMeta: metav1.ObjectMeta{Name: "cert-manager-local", Namespace: "seam-tenant-local", ResourceVersion: "1"},
		Spec: infrastructure.InfrastructurePackInstanceSpec{
			ClusterPackRef:   "cert-manager",
			Version:          "v1.4.0-r2",
			TargetClusterRef: "local",
			DependsOn:        []string{"crds-local"},
			DependencyPolicy: &infrastructure.DependencyPolicy{OnDrift: infrastructure.OnDriftBlock},
			ChartVersion:     "1.14.5",
			ChartURL:         "https://charts.example.com/stable",
			ChartName:        "cert-manager",
			HelmVersion:      "v3.22.0",
		},
	}
}

func TestValidInstance(t *testing.T) {
	if errs := ValidateInfrastructurePackInstance(instance()); len(errs) > 0 {
		t.Fatalf("valid instance: %v", errs)
	}
	// A raw pack's instance: no chart fields, no dependencies, no version yet.
	i := &infrastructure.InfrastructurePackInstance{
		ObjectMeta: metav1.ObjectMeta{Name: "ingress-raw-edge", Namespace: "seam-tenant-edge"},
		Spec:       infrastructure.InfrastructurePackInstanceSpec{ClusterPackRef: "ingress-raw", TargetClusterRef: "edge"},
	}
	if errs := ValidateInfrastructurePackInstance(i); len(errs) > 0 {
		t.Fatalf("a raw pack's instance: %v", errs)
	}
}

func TestInstanceRules(t *testing.T) {
	type inst = infrastructure.InfrastructurePackInstance
	cases := map[string]struct {
		mutate func(*inst)
		want   wantErr
	}{
		"wrong name":          {func(i *inst) { i.Name = "cert-manager" }, wantErr{"metadata.name", field.ErrorTypeInvalid}},
		"name of another":     {func(i *inst) { i.Name = "cert-manager-edge" }, wantErr{"metadata.name", field.ErrorTypeInvalid}},
		"wrong namespace":     {func(i *inst) { i.Namespace = "plinth-system" }, wantErr{"metadata.namespace", field.ErrorTypeInvalid}},
		"another's namespace": {func(i *inst) { i.Namespace = "seam-tenant-edge" }, wantErr{"metadata.namespace", field.ErrorTypeInvalid}},
		"no clusterPackRef":   {func(i *inst) { i.Spec.ClusterPackRef = "" }, wantErr{"spec.clusterPackRef", field.ErrorTypeRequired}},
		"clusterPackRef not a pack name": {func(i *inst) { i.Spec.ClusterPackRef, i.Name = "cert.manager", "cert.manager-local" },
			wantErr{"spec.clusterPackRef", field.ErrorTypeInvalid}},
		"no targetClusterRef": {func(i *inst) { i.Spec.TargetClusterRef = "" }, wantErr{"spec.targetClusterRef", field.ErrorTypeRequired}},
		"bad version":         {func(i *inst) { i.Spec.Version = "v1.0" }, wantErr{"spec.version", field.ErrorTypeInvalid}},
		"dependsOn twice":     {func(i *inst) { i.Spec.DependsOn = []string{"crds-local", "crds-local"} }, wantErr{"spec.dependsOn[1]", field.ErrorTypeDuplicate}},
		"dependsOn not name":  {func(i *inst) { i.Spec.DependsOn = []string{"CRDs"} }, wantErr{"spec.dependsOn[0]", field.ErrorTypeInvalid}},
		"onDrift Stop": {func(i *inst) { i.Spec.DependencyPolicy.OnDrift = "Stop" },
			wantErr{"spec.dependencyPolicy.onDrift", field.ErrorTypeNotSupported}},
	}
	for name, tc := range cases {
		i := instance()
		tc.mutate(i)
		expectOne(t, name, ValidateInfrastructurePackInstance(i), tc.want)
	}
	// A cluster name too long for the instance's namespace is reported at the reference (the
	// namespace, a DNS label, cannot be right then either).
	i := instance()
	c := strings.Repeat("c", MaxClusterNameLength+1)
	i.Spec.TargetClusterRef, i.Name = c, "cert-manager-"+c
	if errs := ValidateInfrastructurePackInstance(i); len(errs) != 2 || errs[0].Field != "spec.targetClusterRef" || errs[0].Type != field.ErrorTypeTooLong {
		t.Errorf("a %d-character cluster: %v", len(c), errs)
	}
	// The namespace rule is checked even when the name is also wrong: both are reported.
	i = instance()
	i.Name, i.Namespace = "x", "y"
	if errs := ValidateInfrastructurePackInstance(i); len(errs) != 2 || errs[0].Field != "metadata.name" || errs[1].Field != "metadata.namespace" ||
		!strings.Contains(errs[0].Detail, "cert-manager-local") || !strings.Contains(errs[1].Detail, "seam-tenant-local") {
		t.Errorf("wrong name and namespace: %v", errs)
	}
}

func TestInstanceUpdate(t *testing.T) {
	old := instance()
	delivery := old.DeepCopy()
	delivery.Spec.Version = "v1.5.0"
	delivery.Spec.ChartVersion, delivery.Spec.ChartURL, delivery.Spec.ChartName = "1.15.0", "oci://localhost:5000/charts", "cert-manager-v2"
	delivery.Spec.HelmVersion = "v3.23.0"
	delivery.Spec.DependsOn = nil
	delivery.Spec.DependencyPolicy = &infrastructure.DependencyPolicy{OnDrift: infrastructure.OnDriftIgnore}
	if errs := ValidateInfrastructurePackInstanceUpdate(delivery, old); len(errs) > 0 {
		t.Fatalf("what a new delivery sets: %v", errs)
	}
	type inst = infrastructure.InfrastructurePackInstance
	cases := map[string]struct {
		mutate func(*inst)
		want   wantErr
	}{
		"clusterPackRef":   {func(i *inst) { i.Spec.ClusterPackRef = "issuer" }, wantErr{"spec.clusterPackRef", field.ErrorTypeInvalid}},
		"targetClusterRef": {func(i *inst) { i.Spec.TargetClusterRef = "edge" }, wantErr{"spec.targetClusterRef", field.ErrorTypeInvalid}},
		"bad version":      {func(i *inst) { i.Spec.Version = "1.5.0" }, wantErr{"spec.version", field.ErrorTypeInvalid}},
		"onDrift":          {func(i *inst) { i.Spec.DependencyPolicy.OnDrift = "Stop" }, wantErr{"spec.dependencyPolicy.onDrift", field.ErrorTypeNotSupported}},
	}
	for name, tc := range cases {
		i := old.DeepCopy()
		tc.mutate(i)
		errs := ValidateInfrastructurePackInstanceUpdate(i, old)
		expectOne(t, name, errs, tc.want)
		if tc.want.field != "spec.version" && tc.want.field != "spec.dependencyPolicy.onDrift" && len(errs) == 1 && !strings.Contains(errs[0].Detail, "immutable") {
			t.Errorf("%s: %v, want immutable", name, errs)
		}
	}
}

func TestInstanceStatus(t *testing.T) {
	old := instance()
	ok := old.DeepCopy()
	now := metav1.Now()
	ok.Status = infrastructure.InfrastructurePackInstanceStatus{
		DeliveredAt: &now, DriftSummary: "Deployment cert-manager/cert-manager: spec.replicas", UpgradeDirection: infrastructure.UpgradeDirectionUpgrade,
		DeployedResources: []infrastructure.DeployedResource{{APIVersion: "v1", Kind: "Namespace", Name: "cert-manager"},
			{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "cert-manager", Name: "cert-manager"}},
		Revision: 3, ObservedGeneration: 1,
		Conditions: []metav1.Condition{{Type: infrastructure.ConditionDrifted, Status: metav1.ConditionTrue, Reason: "ObjectsChanged", LastTransitionTime: now}},
	}
	if errs := ValidateInfrastructurePackInstanceStatusUpdate(ok, old); len(errs) > 0 {
		t.Fatalf("valid status: %v", errs)
	}
	for _, d := range []infrastructure.UpgradeDirection{"", "Initial", "Upgrade", "Rollback", "Redeploy"} {
		i := ok.DeepCopy()
		i.Status.UpgradeDirection = d
		if errs := ValidateInfrastructurePackInstanceStatusUpdate(i, old); len(errs) > 0 {
			t.Errorf("direction %q: %v", d, errs)
		}
	}
	type status = infrastructure.InfrastructurePackInstanceStatus
	cases := map[string]struct {
		mutate func(*status)
		want   wantErr
	}{
		"upgradeDirection Sideways": {func(s *status) { s.UpgradeDirection = "Sideways" }, wantErr{"status.upgradeDirection", field.ErrorTypeNotSupported}},
		"deployed without kind":     {func(s *status) { s.DeployedResources[1].Kind = "" }, wantErr{"status.deployedResources[1].kind", field.ErrorTypeRequired}},
		"deployed without apiVersion": {func(s *status) { s.DeployedResources[0].APIVersion = "" },
			wantErr{"status.deployedResources[0].apiVersion", field.ErrorTypeRequired}},
		"deployed without name": {func(s *status) { s.DeployedResources[0].Name = "" }, wantErr{"status.deployedResources[0].name", field.ErrorTypeRequired}},
		"revision":              {func(s *status) { s.Revision = -1 }, wantErr{"status.revision", field.ErrorTypeInvalid}},
		"observedGeneration":    {func(s *status) { s.ObservedGeneration = -2 }, wantErr{"status.observedGeneration", field.ErrorTypeInvalid}},
		"condition status": {func(s *status) { s.Conditions[0].Status = "Yes" },
			wantErr{"status.conditions[0].status", field.ErrorTypeNotSupported}},
	}
	for name, tc := range cases {
		i := ok.DeepCopy()
		tc.mutate(&i.Status)
		expectOne(t, name, ValidateInfrastructurePackInstanceStatusUpdate(i, old), tc.want)
	}
}
