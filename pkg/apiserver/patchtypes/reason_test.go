package patchtypes

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/jsonmergepatch"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apiserver/pkg/endpoints/openapi"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/kube-openapi/pkg/builder3"
	"sigs.k8s.io/yaml"

	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
	"github.com/plinth-dev/plinth/pkg/apiserver"
	plinthopenapi "github.com/plinth-dev/plinth/pkg/generated/openapi"
)

// workload is a Workload manifest with a container in spec and one in its inline document.
const workload = `apiVersion: score.dev/v1b1
kind: Workload
metadata: {name: shop, namespace: team-a}
spec:
  containers:
    web: {image: "web:1"}
  source:
    inline:
      apiVersion: score.dev/v1b1
      metadata: {name: shop}
      containers:
        main:
          image: "shop:1"
          variables: {A: "1", B: "2"}
      x-team: {owner: sales}
`

func manifest(t *testing.T, edit func(spec map[string]interface{})) []byte {
	t.Helper()
	var m map[string]interface{}
	if err := yaml.Unmarshal([]byte(workload), &m); err != nil {
		t.Fatal(err)
	}
	edit(m["spec"].(map[string]interface{}))
	out, err := yaml.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	json, err := yaml.YAMLToJSON(out)
	if err != nil {
		t.Fatal(err)
	}
	return json
}

func child(m map[string]interface{}, path ...string) map[string]interface{} {
	for _, p := range path {
		m = m[p].(map[string]interface{})
	}
	return m
}

// The reason for this package, pinned: with the Workload schema Plinth publishes, the
// strategic merge patch kubectl apply computes for a change inside the inline document or a
// container fails (the warning users saw), and the server could not merge one either; the
// three-way JSON merge patch kubectl computes instead carries the change and deletes a removed
// key with null, leaving the document's unknown fields alone. If the first half ever stops
// failing, strategic merge patch could be offered again.
func TestWhyNoStrategicMergePatch(t *testing.T) {
	namer := openapi.NewDefinitionNamer(apiserver.Scheme)
	name := v1b1.Workload{}.OpenAPIModelName()
	defs, err := builder3.BuildOpenAPIDefinitionsForResources(genericapiserver.DefaultOpenAPIV3Config(plinthopenapi.GetOpenAPIDefinitions, namer), name)
	if err != nil {
		t.Fatal(err)
	}
	served := strategicpatch.PatchMetaFromOpenAPIV3{Schema: defs[name], SchemaList: defs}
	original := manifest(t, func(map[string]interface{}) {})

	for change, tc := range map[string]struct {
		edit func(spec map[string]interface{})
		want string
	}{
		"an image inside the inline document": {
			func(s map[string]interface{}) { child(s, "source", "inline", "containers", "main")["image"] = "shop:2" },
			`{"spec":{"source":{"inline":{"containers":{"main":{"image":"shop:2"}}}}}}`,
		},
		"a key removed inside the inline document": {
			func(s map[string]interface{}) {
				delete(child(s, "source", "inline", "containers", "main", "variables"), "B")
			},
			`{"spec":{"source":{"inline":{"containers":{"main":{"variables":{"B":null}}}}}}}`,
		},
		"an image of a container in spec": {
			func(s map[string]interface{}) { child(s, "containers", "web")["image"] = "web:2" },
			`{"spec":{"containers":{"web":{"image":"web:2"}}}}`,
		},
	} {
		t.Run(change, func(t *testing.T) {
			modified := manifest(t, tc.edit)
			if _, err := strategicpatch.CreateThreeWayMergePatch(original, modified, original, served, false); err == nil {
				t.Error("kubectl can now compute a strategic merge patch from the published schema")
			}
			if _, err := strategicpatch.StrategicMergePatch(original, []byte(tc.want), &v1b1.Workload{}); err == nil {
				t.Error("the server can now merge a strategic merge patch of this change")
			}
			patch, err := jsonmergepatch.CreateThreeWayJSONMergePatch(original, modified, original)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, string(patch)); diff != "" {
				t.Errorf("JSON merge patch (-want +got):\n%s", diff)
			}
		})
	}
}
