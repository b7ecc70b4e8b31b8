package kubernetes

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"unicode/utf8"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	kubeinformers "k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
	scorespec "github.com/plinth-dev/plinth/pkg/score"
)

// escapesWorkload uses Score's $$ escapes in variables and file contents, next to placeholders of
// plain and secret outputs and an output whose value holds $ itself.
func escapesWorkload() *v1b1.Workload {
	return &v1b1.Workload{
		ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "team-a"},
		Spec: v1b1.WorkloadSpec{
			Containers: map[string]v1b1.Container{"main": {
				Image: "registry.example.com/shop:1",
				Variables: map[string]string{
					"HOME_REF": "$${HOME}",
					"PASS_REF": "$${resources.db.password}",
					"DOLLARS":  "a$$$$b $$(x) c$",
					"FROM_CFG": "${resources.cfg.tpl}",
					"DB_URL":   "postgres://app:${resources.db.password}@${resources.db.host}/$${DB}",
				},
				Files: []v1b1.ContainerFile{
					{Target: "/etc/app.conf", Content: ptr.To("home=$${HOME}\nlit=$${resources.db.password}\ncfg=${resources.cfg.tpl}\npw=${resources.db.password}\nd=$$$$ $$ 5$\n")},
					{Target: "/etc/plain.conf", Content: ptr.To("plain $${HOME} in ${metadata.name}")},
					{Target: "/etc/raw.conf", Content: ptr.To("as is $${HOME} ${x}"), NoExpand: true},
				},
			}},
			Resources: map[string]v1b1.ResourceSpec{"db": {Type: "postgres"}, "cfg": {Type: "environment"}},
		},
	}
}

// What the container must see: each escape undone once.
var (
	wantEnv = map[string]string{
		"HOME_REF": "${HOME}",
		"PASS_REF": "${resources.db.password}",
		"DOLLARS":  "a$$b $(x) c$",
		"FROM_CFG": "x$$y $(z) ${w}",
		"DB_URL":   "postgres://app:s3cr3t@shop-db.team-a.svc/${DB}",
	}
	wantFiles = []string{
		"home=${HOME}\nlit=${resources.db.password}\ncfg=x$$y $(z) ${w}\npw=s3cr3t\nd=$$ $ 5$\n",
		"plain ${HOME} in shop",
		"as is $${HOME} ${x}",
	}
)

// Score's escapes are undone exactly once between the Workload and the container: $${HOME} in a
// variable or a file reaches the container as ${HOME}, not as an unknown placeholder the
// runtime refuses, and $${resources.db.password} as that text, never filled with the password.
// The Workload goes through the orchestrator's projection and this runtime as it does in the
// cluster; variables are expanded as the kubelet expands them.
func TestEscapesAreUndoneOnceOnTheWayToTheContainer(t *testing.T) {
	w := escapesWorkload()
	resolved, errs := scorespec.Resolve(w)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	projection, err := scorespec.Project(w, resolved, map[string]scorespec.Outputs{
		"db":  {Values: map[string]string{"host": "shop-db.team-a.svc"}, Secrets: sets.New("password")},
		"cfg": {Values: map[string]string{"tpl": "x$$y $(z) ${w}"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	plan := &v1b1.WorkloadPlan{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "shop", UID: "plan-uid"},
		Spec: v1b1.WorkloadPlanSpec{WorkloadRef: v1b1.PlanWorkloadReference{Name: "shop"}, RuntimeClass: "kubernetes", Projection: projection.Projection}}
	bindings := map[string]*v1b1.ResourceBinding{
		"db": {Status: v1b1.ResourceBindingStatus{Outputs: &v1b1.BindingOutputs{Metadata: map[string]string{"host": "shop-db.team-a.svc"},
			Credentials: &v1b1.CredentialsReference{SecretRef: &v1b1.SecretKeyReference{Name: "shop-db"}}}}},
		"cfg": {Status: v1b1.ResourceBindingStatus{Outputs: &v1b1.BindingOutputs{Metadata: map[string]string{"tpl": "x$$y $(z) ${w}"}}}},
	}
	kube := kubefake.NewClientset()
	factory := kubeinformers.NewSharedInformerFactory(kube, 0)
	apps, core := factory.Apps().V1(), factory.Core().V1()
	if err := core.Secrets().Informer().GetIndexer().Add(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "shop-db", Namespace: "team-a"},
		Data: map[string][]byte{"username": []byte("app"), "password": []byte("s3cr3t")}}); err != nil {
		t.Fatal(err)
	}
	rt := New(kube, apps.Deployments().Lister(), core.Services().Lister(), core.Secrets().Lister())
	if _, err := rt.Apply(context.Background(), plan, bindings); err != nil {
		t.Fatalf("Apply: %v", err)
	}

	var deployment appsv1.Deployment
	var files corev1.Secret
	for _, a := range kube.Actions() {
		p, ok := a.(k8stesting.PatchAction)
		if !ok {
			continue
		}
		var into interface{}
		switch a.GetResource().Resource {
		case "deployments":
			into = &deployment
		case "secrets":
			into = &files
		default:
			continue
		}
		if err := json.Unmarshal(p.GetPatch(), into); err != nil {
			t.Fatal(err)
		}
	}
	if len(deployment.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("deployment containers: %+v", deployment.Spec.Template.Spec.Containers)
	}
	got := kubeletEnv(deployment.Spec.Template.Spec.Containers[0].Env, map[string]string{"shop-db/password": "s3cr3t"})
	for name, want := range wantEnv {
		if got[name] != want {
			t.Errorf("the container sees %s=%q, want %q", name, got[name], want)
		}
	}
	for i, want := range wantFiles {
		key := "main-" + string(rune('0'+i))
		if got := string(files.Data[key]); got != want {
			t.Errorf("file %d holds %q, want %q", i, got, want)
		}
	}
}

// kubeletEnv is the environment a container gets from env: each variable's value expanded in
// order as the kubelet expands it (k8s.io/kubernetes third_party/forked/golang/expansion: $$ is
// $, $(NAME) an earlier variable, anything else as written), secretKeyRefs read from secrets
// ("secret/key").
func kubeletEnv(env []corev1.EnvVar, secrets map[string]string) map[string]string {
	out := map[string]string{}
	for _, e := range env {
		if ref := e.ValueFrom; ref != nil && ref.SecretKeyRef != nil {
			out[e.Name] = secrets[ref.SecretKeyRef.Name+"/"+ref.SecretKeyRef.Key]
			continue
		}
		out[e.Name] = kubeletExpand(e.Value, out)
	}
	return out
}

func kubeletExpand(input string, vars map[string]string) string {
	var buf bytes.Buffer
	checkpoint := 0
	for cursor := 0; cursor < len(input); cursor++ {
		if input[cursor] != '$' || cursor+1 >= len(input) {
			continue
		}
		buf.WriteString(input[checkpoint:cursor])
		rest := input[cursor+1:]
		r, size := utf8.DecodeRuneInString(rest)
		read, isVar, advance := "$"+string(r), false, size
		switch r {
		case '$':
			read = "$"
		case '(':
			read, advance = "$(", 1
			for i := 1; i < len(rest); i++ {
				if rest[i] == ')' {
					read, isVar, advance = rest[1:i], true, i+1
					break
				}
			}
		}
		if isVar {
			if v, ok := vars[read]; ok {
				read = v
			} else {
				read = "$(" + read + ")"
			}
		}
		buf.WriteString(read)
		cursor += advance
		checkpoint = cursor + 1
	}
	return buf.String() + input[checkpoint:]
}
