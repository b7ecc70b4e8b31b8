package provisioner

import (
	"context"
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/utils/ptr"

	"github.com/plinth-dev/plinth/pkg/apis/score"
	"github.com/plinth-dev/plinth/pkg/apis/score/install"
	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
	"github.com/plinth-dev/plinth/pkg/embeddedetcd/etcdtest"
)

var scheme = runtime.NewScheme()

func init() {
	install.Install(scheme)
	metav1.AddToGroupVersion(scheme, schema.GroupVersion{Version: "v1"})
}

func provisioner(name, typ string) *score.Provisioner {
	return &score.Provisioner{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: score.ProvisionerSpec{
			URI: "template://platform/" + name, Type: typ,
			Outputs: "host: {{ .Id }}", ExpectedOutputs: []string{"host"},
		},
	}
}

// A provisioner is stored cluster-scoped with generation 1, validated on create and update,
// and its generation counts spec changes.
func TestProvisionerLifecycle(t *testing.T) {
	codec := serializer.NewCodecFactory(scheme).LegacyCodec(v1b1.SchemeGroupVersion)
	main, err := NewREST(scheme, etcdtest.Run(t, codec).OptionsGetter())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(main.Destroy)
	if main.NamespaceScoped() {
		t.Error("provisioners are namespaced")
	}
	if s := main.ShortNames(); len(s) != 1 || s[0] != "prov" {
		t.Errorf("short names %v", s)
	}
	if c := main.Categories(); len(c) != 1 || c[0] != "score" {
		t.Errorf("categories %v", c)
	}
	ctx := etcdtest.As("", "dana", "platform:admins")

	obj, err := main.Create(ctx, provisioner("postgres", "postgres"), rest.ValidateAllObjectFunc, &metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if g := obj.(*score.Provisioner).Generation; g != 1 {
		t.Errorf("generation %d, want 1", g)
	}
	cmd := provisioner("script", "postgres")
	cmd.Spec.URI = "cmd://./postgres.sh"
	_, err = main.Create(ctx, cmd, rest.ValidateAllObjectFunc, &metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.uri") {
		t.Fatalf("a cmd:// provisioner: %v", err)
	}

	update := func(mutate func(*score.Provisioner)) (*score.Provisioner, error) {
		out, _, err := main.Update(ctx, "postgres", rest.DefaultUpdatedObjectInfo(nil, func(_ context.Context, _, old runtime.Object) (runtime.Object, error) {
			obj := old.DeepCopyObject().(*score.Provisioner)
			mutate(obj)
			return obj, nil
		}), rest.ValidateAllObjectFunc, rest.ValidateAllObjectUpdateFunc, false, &metav1.UpdateOptions{})
		if err != nil {
			return nil, err
		}
		return out.(*score.Provisioner), nil
	}
	p, err := update(func(p *score.Provisioner) { p.Spec.Class = ptr.To("large") })
	if err != nil {
		t.Fatal(err)
	}
	if p.Generation != 2 {
		t.Errorf("generation after a class change %d, want 2", p.Generation)
	}
	p, err = update(func(p *score.Provisioner) { p.Labels = map[string]string{"team": "platform"} })
	if err != nil || p.Generation != 2 {
		t.Errorf("a label change: generation %d, %v", p.Generation, err)
	}
	if _, err := update(func(p *score.Provisioner) { p.Spec.Outputs = "{{ .Init" }); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.outputs") {
		t.Errorf("an update with an unparsable template: %v", err)
	}
}

// The table prints score-k8s provisioners list's columns: (any) for an unset class, params
// and outputs sorted and joined by ", ", <none> for what is empty.
func TestTable(t *testing.T) {
	full := provisioner("postgres-large", "postgres")
	full.Spec.Class = ptr.To("large")
	full.Spec.SupportedParams = []string{"version", "extensions"}
	full.Spec.ExpectedOutputs = []string{"username", "host", "port"}
	full.Spec.Description = "A dedicated PostgreSQL database."
	bare := provisioner("dns", "dns")
	bare.Spec.ExpectedOutputs = nil
	for obj, want := range map[*score.Provisioner]string{
		full: "[postgres-large postgres large extensions, version host, port, username A dedicated PostgreSQL database.]",
		bare: "[dns dns (any) <none> <none> <none>]",
	} {
		tbl, err := Table.ConvertToTable(context.Background(), obj, nil)
		if err != nil {
			t.Fatal(err)
		}
		var headers []string
		for _, c := range tbl.ColumnDefinitions {
			headers = append(headers, c.Name)
		}
		if got := strings.Join(headers, " "); got != "Name Type Class Params Outputs Description Age" {
			t.Errorf("headers %s", got)
		}
		cells := tbl.Rows[0].Cells
		if got := fmt.Sprint(cells[:len(cells)-1]); got != want {
			t.Errorf("row %s, want %s", got, want)
		}
	}
	// The object's lists keep their order: only the printed copy is sorted.
	if full.Spec.SupportedParams[0] != "version" {
		t.Errorf("the table sorted the object's params: %v", full.Spec.SupportedParams)
	}
}
