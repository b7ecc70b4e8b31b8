package governedvm

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
	scorespec "github.com/plinth-dev/plinth/pkg/score"
)

// Score's escapes are undone exactly once between the Workload and the VM's containers: $${HOME}
// in a variable or a file reaches the guest as ${HOME}, and $${resources.db.password} is that
// text, not a secret output the VM refuses. The Workload goes through the orchestrator's
// projection and this runtime as it does in the cluster.
func TestEscapesAreUndoneOnceOnTheWayToTheVM(t *testing.T) {
	w := &v1b1.Workload{
		ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "team-a"},
		Spec: v1b1.WorkloadSpec{
			Containers: map[string]v1b1.Container{"web": {
				Image: "nginx:1.27",
				Variables: map[string]string{
					"HOME_REF": "$${HOME}",
					"DOLLARS":  "a$$$$b $$(x) c$",
					"FROM_CFG": "${resources.cfg.tpl}",
				},
				Files: []v1b1.ContainerFile{
					{Target: "/etc/app.conf", Content: ptr.To("home=$${HOME}\nlit=$${resources.db.password}\ncfg=${resources.cfg.tpl}\nd=$$$$ $$ 5$\n")},
					{Target: "/etc/raw.conf", Content: ptr.To("as is $${HOME}"), NoExpand: true},
				},
			}},
			Resources: map[string]v1b1.ResourceSpec{"db": {Type: "postgres"}, "cfg": {Type: "environment"}},
		},
	}
	project := func(w *v1b1.Workload) *v1b1.WorkloadPlan {
		t.Helper()
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
		return &v1b1.WorkloadPlan{ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "team-a"},
			Spec: v1b1.WorkloadPlanSpec{WorkloadRef: v1b1.PlanWorkloadReference{Name: "shop"}, RuntimeClass: Name, Projection: projection.Projection}}
	}
	bindings := map[string]*v1b1.ResourceBinding{
		"db":  shopBindings()["db"],
		"cfg": {Status: v1b1.ResourceBindingStatus{Outputs: &v1b1.BindingOutputs{Metadata: map[string]string{"tpl": "x$$y $(z) ${w}"}}}},
	}
	want, err := wantVM(project(w), bindings)
	if err != nil {
		t.Fatalf("wantVM: %v", err)
	}
	var doc struct {
		WriteFiles []struct {
			Path    string `json:"path"`
			Content string `json:"content"`
		} `json:"write_files"`
		Runcmd [][]string `json:"runcmd"`
	}
	if err := yaml.Unmarshal([]byte(want.spec.CloudInit), &doc); err != nil {
		t.Fatalf("%v:\n%s", err, want.spec.CloudInit)
	}
	files := map[string]string{}
	for _, f := range doc.WriteFiles {
		files[f.Path] = f.Content
	}
	for path, content := range map[string]string{
		"/etc/plinth/files/web/0": "home=${HOME}\nlit=${resources.db.password}\ncfg=x$$y $(z) ${w}\nd=$$ $ 5$\n",
		"/etc/plinth/files/web/1": "as is $${HOME}",
	} {
		if files[path] != content {
			t.Errorf("the guest writes %s as %q, want %q", path, files[path], content)
		}
	}
	env := map[string]string{}
	for _, cmd := range doc.Runcmd {
		for i := 0; i+1 < len(cmd); i++ {
			if cmd[i] == "-e" {
				name, value, _ := strings.Cut(cmd[i+1], "=")
				env[name] = value
			}
		}
	}
	for name, value := range map[string]string{"HOME_REF": "${HOME}", "DOLLARS": "a$$b $(x) c$", "FROM_CFG": "x$$y $(z) ${w}"} {
		if env[name] != value {
			t.Errorf("the container sees %s=%q, want %q", name, env[name], value)
		}
	}

	// A secret output in a file, not escaped, is still refused.
	c := w.Spec.Containers["web"]
	c.Files = []v1b1.ContainerFile{{Target: "/etc/db.conf", Content: ptr.To("pw=${resources.db.password} home=$${HOME}")}}
	w.Spec.Containers["web"] = c
	if _, err := wantVM(project(w), bindings); err == nil ||
		err.Error() != "File /etc/db.conf of container web uses a secret output, which a virtual machine cannot receive without showing it to its approvers." {
		t.Errorf("a secret output in a file: %v", err)
	}
}
