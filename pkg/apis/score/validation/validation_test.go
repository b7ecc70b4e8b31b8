package validation

import (
	"sort"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/plinth-dev/plinth/pkg/apis/common"
	"github.com/plinth-dev/plinth/pkg/apis/score"
)

const testUID = "6a3c1e9e-8f5d-4c3b-9a57-0d5b7c2f4e11"

func validWorkload() *score.Workload {
	return &score.Workload{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "team-a"},
		Spec: score.WorkloadSpec{
			RuntimeClass: "kubernetes",
			Resources: map[string]score.ResourceSpec{
				"db":   {Type: "postgres", Class: "default", Params: &common.RawObject{Raw: []byte(`{"version":16}`)}},
				"data": {Type: "volume"},
			},
			Containers: map[string]score.Container{
				"main": {
					Image:     "registry.example.com/web:1.0",
					Variables: map[string]string{"DB_HOST": "${resources.db.host}"},
					Files:     []score.ContainerFile{{Target: "/etc/app.conf", Content: ptr.To("x"), Mode: "0644"}},
					Volumes:   []score.ContainerVolume{{Target: "/data", Source: "${resources.data}"}},
					Resources: &score.ContainerResources{Limits: &score.ResourceAmounts{CPU: "500m", Memory: "128Mi"}},
					LivenessProbe: &score.ContainerProbe{
						HTTPGet: &score.HTTPGetProbe{Path: "/healthz", Port: 8080},
					},
				},
			},
			Service: &score.ServiceSpec{Ports: map[string]score.ServicePort{"web": {Port: 80, TargetPort: 8080, Protocol: "TCP"}}},
		},
	}
}

// errorKey renders an error as "type path" for comparison.
func errorKeys(errs field.ErrorList) []string {
	var out []string
	for _, e := range errs {
		out = append(out, string(e.Type)+" "+e.Field)
	}
	sort.Strings(out)
	return out
}

func expectErrors(t *testing.T, errs field.ErrorList, want ...string) {
	t.Helper()
	sort.Strings(want)
	got := errorKeys(errs)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("errors:\n got  %q\n want %q\n(%v)", got, want, errs)
	}
}

func TestValidateWorkload(t *testing.T) {
	cases := map[string]struct {
		mutate func(w *score.Workload)
		want   []string
	}{
		"valid": {func(w *score.Workload) {}, nil},
		"valid with inline source": {func(w *score.Workload) {
			w.Spec.Source = &score.WorkloadSource{Inline: &common.RawObject{Raw: []byte(`{"apiVersion":"score.dev/v1b1","metadata":{"name":"web"},"containers":{"main":{"image":"registry.example.com/web:1.0"}}}`)}}
		}, nil},
		"valid with configMapRef": {func(w *score.Workload) {
			w.Spec.Source = &score.WorkloadSource{ConfigMapRef: &score.ConfigMapKeyReference{Name: "score", Key: "score.yaml"}}
		}, nil},
		"source only, no containers": {func(w *score.Workload) {
			w.Spec.Containers = nil
			w.Spec.Source = &score.WorkloadSource{Inline: &common.RawObject{Raw: []byte(`{"apiVersion":"score.dev/v1b1","metadata":{"name":"web"},"containers":{"main":{"image":"nginx"}}}`)}}
		}, nil},
		"name not a DNS label":    {func(w *score.Workload) { w.Name = "Web_1" }, []string{"FieldValueInvalid metadata.name"}},
		"namespace missing":       {func(w *score.Workload) { w.Namespace = "" }, []string{"FieldValueRequired metadata.namespace"}},
		"no containers no source": {func(w *score.Workload) { w.Spec.Containers = nil }, []string{"FieldValueRequired spec.containers"}},
		"source with both": {func(w *score.Workload) {
			w.Spec.Source = &score.WorkloadSource{Inline: &common.RawObject{Raw: []byte(`{}`)}, ConfigMapRef: &score.ConfigMapKeyReference{Name: "a", Key: "b"}}
		}, []string{"FieldValueInvalid spec.source"}},
		"source with neither": {func(w *score.Workload) { w.Spec.Source = &score.WorkloadSource{} }, []string{"FieldValueRequired spec.source"}},
		"inline not an object": {func(w *score.Workload) {
			w.Spec.Source = &score.WorkloadSource{Inline: &common.RawObject{Raw: []byte(`"text"`)}}
		}, []string{"FieldValueInvalid spec.source.inline"}},
		"configMapRef without key": {func(w *score.Workload) {
			w.Spec.Source = &score.WorkloadSource{ConfigMapRef: &score.ConfigMapKeyReference{Name: "a"}}
		}, []string{"FieldValueRequired spec.source.configMapRef.key"}},
		"configMapRef bad name": {func(w *score.Workload) {
			w.Spec.Source = &score.WorkloadSource{ConfigMapRef: &score.ConfigMapKeyReference{Name: "A B", Key: "k"}}
		}, []string{"FieldValueInvalid spec.source.configMapRef.name"}},
		"runtimeClass not a label": {func(w *score.Workload) { w.Spec.RuntimeClass = "Kube Rnetes" }, []string{"FieldValueInvalid spec.runtimeClass"}},
		"resource without type":    {func(w *score.Workload) { w.Spec.Resources["db"] = score.ResourceSpec{} }, []string{"FieldValueRequired spec.resources[db].type"}},
		"resource bad name":        {func(w *score.Workload) { w.Spec.Resources["My_DB"] = score.ResourceSpec{Type: "postgres"} }, []string{"FieldValueInvalid spec.resources[My_DB]"}},
		"resource params not object": {func(w *score.Workload) {
			w.Spec.Resources["db"] = score.ResourceSpec{Type: "postgres", Params: &common.RawObject{Raw: []byte(`[1]`)}}
		}, []string{"FieldValueInvalid spec.resources[db].params"}},
		"resource bad class": {func(w *score.Workload) {
			w.Spec.Resources["db"] = score.ResourceSpec{Type: "postgres", Class: "big class"}
		}, []string{"FieldValueInvalid spec.resources[db].class"}},
		"container without image": {func(w *score.Workload) {
			c := w.Spec.Containers["main"]
			c.Image = ""
			w.Spec.Containers["main"] = c
		}, []string{"FieldValueRequired spec.containers[main].image"}},
		"container image with space": {func(w *score.Workload) {
			c := w.Spec.Containers["main"]
			c.Image = "nginx latest"
			w.Spec.Containers["main"] = c
		}, []string{"FieldValueInvalid spec.containers[main].image"}},
		"container bad name": {func(w *score.Workload) { w.Spec.Containers["Main"] = w.Spec.Containers["main"] }, []string{"FieldValueInvalid spec.containers[Main]"}},
		"bad variable name": {func(w *score.Workload) {
			w.Spec.Containers["main"].Variables["1BAD"] = "x"
		}, []string{"FieldValueInvalid spec.containers[main].variables.1BAD"}},
		"file with two sources": {func(w *score.Workload) {
			w.Spec.Containers["main"].Files[0].Source = ptr.To("app.conf")
		}, []string{"FieldValueInvalid spec.containers[main].files[0]"}},
		"file with no source": {func(w *score.Workload) {
			w.Spec.Containers["main"].Files[0].Content = nil
		}, []string{"FieldValueRequired spec.containers[main].files[0]"}},
		"file relative target": {func(w *score.Workload) {
			w.Spec.Containers["main"].Files[0].Target = "etc/app.conf"
		}, []string{"FieldValueInvalid spec.containers[main].files[0].target"}},
		"file bad mode": {func(w *score.Workload) {
			w.Spec.Containers["main"].Files[0].Mode = "rwx"
		}, []string{"FieldValueInvalid spec.containers[main].files[0].mode"}},
		"file bad base64": {func(w *score.Workload) {
			f := &w.Spec.Containers["main"].Files[0]
			f.Content, f.BinaryContent = nil, ptr.To("!!!")
		}, []string{"FieldValueInvalid spec.containers[main].files[0].binaryContent"}},
		"duplicate file target": {func(w *score.Workload) {
			c := w.Spec.Containers["main"]
			c.Files = append(c.Files, score.ContainerFile{Target: "/etc/app.conf", Content: ptr.To("y")})
			w.Spec.Containers["main"] = c
		}, []string{"FieldValueDuplicate spec.containers[main].files[1].target"}},
		"volume without source": {func(w *score.Workload) {
			w.Spec.Containers["main"].Volumes[0].Source = ""
		}, []string{"FieldValueRequired spec.containers[main].volumes[0].source"}},
		"volume path escapes": {func(w *score.Workload) {
			w.Spec.Containers["main"].Volumes[0].Path = "../etc"
		}, []string{"FieldValueInvalid spec.containers[main].volumes[0].path"}},
		"bad cpu quantity": {func(w *score.Workload) {
			w.Spec.Containers["main"].Resources.Limits.CPU = "lots"
		}, []string{"FieldValueInvalid spec.containers[main].resources.limits.cpu"}},
		"probe with both kinds": {func(w *score.Workload) {
			w.Spec.Containers["main"].LivenessProbe.Exec = &score.ExecProbe{Command: []string{"true"}}
		}, []string{"FieldValueInvalid spec.containers[main].livenessProbe"}},
		"probe bad port": {func(w *score.Workload) {
			w.Spec.Containers["main"].LivenessProbe.HTTPGet.Port = 0
		}, []string{"FieldValueRequired spec.containers[main].livenessProbe.httpGet.port"}},
		"port missing": {func(w *score.Workload) {
			w.Spec.Service.Ports["web"] = score.ServicePort{}
		}, []string{"FieldValueRequired spec.service.ports[web].port"}},
		"port out of range": {func(w *score.Workload) {
			w.Spec.Service.Ports["web"] = score.ServicePort{Port: 70000}
		}, []string{"FieldValueInvalid spec.service.ports[web].port"}},
		"target port out of range": {func(w *score.Workload) {
			w.Spec.Service.Ports["web"] = score.ServicePort{Port: 80, TargetPort: -1}
		}, []string{"FieldValueInvalid spec.service.ports[web].targetPort"}},
		"bad protocol": {func(w *score.Workload) {
			w.Spec.Service.Ports["web"] = score.ServicePort{Port: 80, Protocol: "SCTP"}
		}, []string{"FieldValueNotSupported spec.service.ports[web].protocol"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			w := validWorkload()
			tc.mutate(w)
			expectErrors(t, ValidateWorkload(w), tc.want...)
		})
	}
}

func TestValidateWorkloadStatus(t *testing.T) {
	cond := func(typ, reason string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: metav1.ConditionFalse, Reason: reason, Message: "Waiting for dependencies.", LastTransitionTime: metav1.Now()}
	}
	cases := map[string]struct {
		status score.WorkloadStatus
		want   []string
	}{
		"valid": {score.WorkloadStatus{
			Endpoint:   ptr.To("https://web.example.com"),
			Conditions: []metav1.Condition{cond(score.ConditionReady, score.ReasonBindingPending)},
			Bindings:   []score.BindingSummary{{Key: "db", Phase: score.BindingPhaseBinding, Reason: score.ReasonBindingPending}},
		}, nil},
		"endpoint not a URI":   {score.WorkloadStatus{Endpoint: ptr.To("web.example.com")}, []string{"FieldValueInvalid status.endpoint"}},
		"unknown condition":    {score.WorkloadStatus{Conditions: []metav1.Condition{cond("Healthy", score.ReasonSucceeded)}}, []string{"FieldValueNotSupported status.conditions[0].type"}},
		"unknown reason":       {score.WorkloadStatus{Conditions: []metav1.Condition{cond(score.ConditionReady, "PodCrashLooping")}}, []string{"FieldValueNotSupported status.conditions[0].reason"}},
		"duplicate condition":  {score.WorkloadStatus{Conditions: []metav1.Condition{cond(score.ConditionReady, score.ReasonSucceeded), cond(score.ConditionReady, score.ReasonSucceeded)}}, []string{"FieldValueDuplicate status.conditions[1]"}},
		"bad binding phase":    {score.WorkloadStatus{Bindings: []score.BindingSummary{{Key: "db", Phase: "Ready"}}}, []string{"FieldValueNotSupported status.bindings[0].phase"}},
		"duplicate binding":    {score.WorkloadStatus{Bindings: []score.BindingSummary{{Key: "db", Phase: "Bound"}, {Key: "db", Phase: "Bound"}}}, []string{"FieldValueDuplicate status.bindings[1].key"}},
		"negative observedGen": {score.WorkloadStatus{ObservedGeneration: -1}, []string{"FieldValueInvalid status.observedGeneration"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			old := validWorkload()
			old.ResourceVersion = "1"
			w := old.DeepCopy()
			w.Status = tc.status
			expectErrors(t, ValidateWorkloadStatusUpdate(w, old), tc.want...)
		})
	}
}

func TestValidatePlatformPolicy(t *testing.T) {
	valid := func() *score.PlatformPolicy {
		return &score.PlatformPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: "defaults"},
			Spec: score.PlatformPolicySpec{
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}},
				Defaults: &score.PolicyDefaults{
					RuntimeClass: "kubernetes",
					Resources:    map[string]score.ResourceDefaults{"postgres": {Class: "small"}},
					Labels:       map[string]string{"tier": "web"},
				},
				Constraints: &score.PolicyConstraints{
					AllowedRuntimeClasses: []string{"kubernetes"},
					ResourceTypes:         &score.ResourceTypeConstraints{Allowed: []string{"postgres"}, Denied: []string{"mysql"}},
					Images:                &score.ImageConstraints{AllowedRegistries: []string{"registry.example.com"}, RequiredTags: []string{"v*"}},
				},
				Priority: 10,
			},
		}
	}
	cases := map[string]struct {
		mutate func(p *score.PlatformPolicy)
		want   []string
	}{
		"valid":              {func(p *score.PlatformPolicy) {}, nil},
		"namespaced":         {func(p *score.PlatformPolicy) { p.Namespace = "x" }, []string{"FieldValueForbidden metadata.namespace"}},
		"bad selector":       {func(p *score.PlatformPolicy) { p.Spec.Selector.MatchLabels = map[string]string{"bad key!": "a"} }, []string{"FieldValueInvalid spec.selector.matchLabels"}},
		"bad runtime class":  {func(p *score.PlatformPolicy) { p.Spec.Defaults.RuntimeClass = "A" }, []string{"FieldValueInvalid spec.defaults.runtimeClass"}},
		"bad default label":  {func(p *score.PlatformPolicy) { p.Spec.Defaults.Labels = map[string]string{"tier": "not valid!"} }, []string{"FieldValueInvalid spec.defaults.labels"}},
		"allowed and denied": {func(p *score.PlatformPolicy) { p.Spec.Constraints.ResourceTypes.Denied = []string{"postgres"} }, []string{"FieldValueInvalid spec.constraints.resourceTypes.denied[0]"}},
		"duplicate allowed":  {func(p *score.PlatformPolicy) { p.Spec.Constraints.AllowedRuntimeClasses = []string{"a", "a"} }, []string{"FieldValueDuplicate spec.constraints.allowedRuntimeClasses[1]"}},
		"registry with scheme": {func(p *score.PlatformPolicy) {
			p.Spec.Constraints.Images.AllowedRegistries = []string{"https://registry.example.com"}
		}, []string{"FieldValueInvalid spec.constraints.images.allowedRegistries[0]"}},
		"bad tag pattern": {func(p *score.PlatformPolicy) { p.Spec.Constraints.Images.RequiredTags = []string{"v 1"} }, []string{"FieldValueInvalid spec.constraints.images.requiredTags[0]"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := valid()
			tc.mutate(p)
			expectErrors(t, ValidatePlatformPolicy(p), tc.want...)
		})
	}
}

func validBinding() *score.ResourceBinding {
	return &score.ResourceBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "web-db", Namespace: "team-a", ResourceVersion: "1"},
		Spec: score.ResourceBindingSpec{
			WorkloadRef: score.WorkloadReference{Name: "web", UID: testUID},
			ResourceKey: "db", Type: "postgres",
		},
	}
}

func TestValidateResourceBinding(t *testing.T) {
	cases := map[string]struct {
		mutate func(b *score.ResourceBinding)
		want   []string
	}{
		"valid":             {func(b *score.ResourceBinding) {}, nil},
		"missing type":      {func(b *score.ResourceBinding) { b.Spec.Type = "" }, []string{"FieldValueRequired spec.type"}},
		"missing workload":  {func(b *score.ResourceBinding) { b.Spec.WorkloadRef.Name = "" }, []string{"FieldValueRequired spec.workloadRef.name"}},
		"bad uid":           {func(b *score.ResourceBinding) { b.Spec.WorkloadRef.UID = "not-a-uid" }, []string{"FieldValueInvalid spec.workloadRef.uid"}},
		"missing key":       {func(b *score.ResourceBinding) { b.Spec.ResourceKey = "" }, []string{"FieldValueRequired spec.resourceKey"}},
		"params not object": {func(b *score.ResourceBinding) { b.Spec.Params = &common.RawObject{Raw: []byte(`3`)} }, []string{"FieldValueInvalid spec.params"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			b := validBinding()
			tc.mutate(b)
			expectErrors(t, ValidateResourceBinding(b), tc.want...)
		})
	}
}

func TestValidateResourceBindingUpdate(t *testing.T) {
	old := validBinding()
	b := old.DeepCopy()
	b.Spec.ResourceKey = "cache"
	b.Spec.WorkloadRef.Name = "api"
	expectErrors(t, ValidateResourceBindingUpdate(b, old), "FieldValueInvalid spec.resourceKey", "FieldValueInvalid spec.workloadRef")
}

func TestValidateResourceBindingStatus(t *testing.T) {
	cases := map[string]struct {
		status score.ResourceBindingStatus
		want   []string
	}{
		"valid": {score.ResourceBindingStatus{Phase: score.BindingPhaseBound, Outputs: &score.BindingOutputs{
			Endpoint:    "postgres://web-db.team-a.svc:5432",
			Credentials: &score.CredentialsReference{SecretRef: &score.SecretKeyReference{Name: "web-db"}},
		}}, nil},
		"bad phase":       {score.ResourceBindingStatus{Phase: "Ready"}, []string{"FieldValueNotSupported status.phase"}},
		"bad endpoint":    {score.ResourceBindingStatus{Outputs: &score.BindingOutputs{Endpoint: "::"}}, []string{"FieldValueInvalid status.outputs.endpoint"}},
		"secret ref name": {score.ResourceBindingStatus{Outputs: &score.BindingOutputs{Credentials: &score.CredentialsReference{SecretRef: &score.SecretKeyReference{}}}}, []string{"FieldValueRequired status.outputs.credentials.secretRef.name"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			old := validBinding()
			b := old.DeepCopy()
			b.Status = tc.status
			expectErrors(t, ValidateResourceBindingStatusUpdate(b, old), tc.want...)
		})
	}
}

func TestValidateWorkloadPlan(t *testing.T) {
	valid := func() *score.WorkloadPlan {
		return &score.WorkloadPlan{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "team-a"},
			Spec: score.WorkloadPlanSpec{
				WorkloadRef:  score.PlanWorkloadReference{Name: "web", UID: testUID, Generation: 2},
				RuntimeClass: "kubernetes",
				Projection: score.WorkloadProjection{
					Containers: map[string]score.ContainerProjection{"main": {
						Image: "nginx",
						Env: []score.EnvProjection{
							{Name: "MODE", Value: ptr.To("prod")},
							{Name: "DB_HOST", From: &score.BindingOutputSource{BindingKey: "db", OutputKey: "host"}},
						},
					}},
					Networking: &score.NetworkingProjection{Ingress: []score.IngressRule{{Host: "web.example.com", Path: "/", Port: 80}}},
				},
				Bindings: []score.PlanBinding{{Key: "db", Type: "postgres", Outputs: []string{"host"}, Critical: true}},
				Metadata: &score.PlanMetadata{OwnershipMode: score.OwnershipModeController},
			},
		}
	}
	cases := map[string]struct {
		mutate func(p *score.WorkloadPlan)
		want   []string
	}{
		"valid":                {func(p *score.WorkloadPlan) {}, nil},
		"missing runtimeClass": {func(p *score.WorkloadPlan) { p.Spec.RuntimeClass = "" }, []string{"FieldValueRequired spec.runtimeClass"}},
		"name mismatch":        {func(p *score.WorkloadPlan) { p.Spec.WorkloadRef.Name = "api" }, []string{"FieldValueInvalid spec.workloadRef.name"}},
		"env value and from": {func(p *score.WorkloadPlan) {
			p.Spec.Projection.Containers["main"].Env[1].Value = ptr.To("x")
		}, []string{"FieldValueInvalid spec.projection.containers[main].env[1]"}},
		"duplicate env": {func(p *score.WorkloadPlan) {
			p.Spec.Projection.Containers["main"].Env[1].Name = "MODE"
		}, []string{"FieldValueDuplicate spec.projection.containers[main].env[1].name"}},
		"bad ownership mode": {func(p *score.WorkloadPlan) { p.Spec.Metadata.OwnershipMode = "everyone" }, []string{"FieldValueNotSupported spec.metadata.ownershipMode"}},
		"ingress without host": {func(p *score.WorkloadPlan) {
			p.Spec.Projection.Networking.Ingress[0].Host = ""
		}, []string{"FieldValueRequired spec.projection.networking.ingress[0].host"}},
		"duplicate binding": {func(p *score.WorkloadPlan) {
			p.Spec.Bindings = append(p.Spec.Bindings, p.Spec.Bindings[0])
		}, []string{"FieldValueDuplicate spec.bindings[1].key"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := valid()
			tc.mutate(p)
			expectErrors(t, ValidateWorkloadPlan(p), tc.want...)
		})
	}
	old := valid()
	old.ResourceVersion = "1"
	bad := old.DeepCopy()
	bad.Status.Phase = "Done"
	expectErrors(t, ValidateWorkloadPlanStatusUpdate(bad, old), "FieldValueNotSupported status.phase")
}
