package provisioners

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"reflect"
	"sort"
	"strings"
	"testing"

	kjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes/scheme"
)

// sampleData is a resource as the controller would describe it.
func sampleData(typ string) Data {
	return Data{
		Guid: "1b4e28ba-2fa1-11d2-883f-0016d3cca427", Type: typ, Class: "default", Id: "checkout-service.db",
		Uid: typ + ".default#checkout-service.db", SourceWorkload: "checkout-service", Namespace: "team-a",
		WorkloadMetadata: map[string]interface{}{"name": "checkout-service"},
		WorkloadServices: map[string]NetworkService{"checkout-service": {ServiceName: "checkout-service", Ports: map[string]ServicePort{}}},
	}
}

func TestBuiltInTypes(t *testing.T) {
	specs, err := BuiltIn()
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, s := range specs {
		types = append(types, s.Type)
	}
	sort.Strings(types)
	want := []string{"amqp", "elasticsearch", "environment", "kafka-topic", "mongodb", "mssql", "postgres-instance", "s3", "service"}
	if !reflect.DeepEqual(types, want) {
		t.Errorf("built-in types = %v, want %v (plinth-controller provisions postgres, mysql, redis, volume, dns, route and service-port in Go)", types, want)
	}
}

// Every built-in provisioner that runs a server renders objects Kubernetes accepts, keeps its
// state across renders, gives every output it promises, and publishes each credential as a
// key of a Secret it creates, never as a value.
func TestBuiltInServers(t *testing.T) {
	specs, err := BuiltIn()
	if err != nil {
		t.Fatal(err)
	}
	decoder := kjson.NewSerializerWithOptions(kjson.DefaultMetaFactory, scheme.Scheme, scheme.Scheme, kjson.SerializerOptions{Strict: true})
	for _, spec := range specs {
		if spec.Type == "environment" || spec.Type == "service" {
			continue // no objects, tested below
		}
		t.Run(spec.Type, func(t *testing.T) {
			tmpl, err := Compile(spec)
			if err != nil {
				t.Fatal(err)
			}
			first, err := tmpl.Render(sampleData(spec.Type))
			if err != nil {
				t.Fatal(err)
			}
			data := sampleData(spec.Type)
			data.State = first.State
			second, err := tmpl.Render(data)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(first.State, second.State) || !reflect.DeepEqual(first.Outputs, second.Outputs) ||
				!reflect.DeepEqual(first.Manifests, second.Manifests) {
				t.Error("a second render from the first's state differs: credentials would change on every reconcile")
			}

			values, secrets, err := SplitOutputs(first.Outputs)
			if err != nil {
				t.Fatal(err)
			}
			for _, name := range spec.ExpectedOutputs {
				if _, ok := first.Outputs[name]; !ok {
					t.Errorf("the expected output %s is missing", name)
				}
			}
			if len(first.Outputs) != len(spec.ExpectedOutputs) {
				t.Errorf("outputs %v are not the expected %v", sortedKeys(first.Outputs), spec.ExpectedOutputs)
			}
			for key, v := range first.State {
				if s, _ := v.(string); strings.Contains(strings.ToLower(key), "password") || strings.Contains(key, "secret") {
					for name, value := range values {
						if strings.Contains(value, s) {
							t.Errorf("the output %s holds the credential %s", name, key)
						}
					}
				}
			}

			secretData := map[string]map[string]interface{}{}
			for i, m := range first.Manifests {
				raw, err := json.Marshal(m)
				if err != nil {
					t.Fatal(err)
				}
				if _, _, err := decoder.Decode(raw, nil, nil); err != nil {
					t.Errorf("manifest %d is not a valid object: %v", i, err)
				}
				if ContainsSecretRef(string(raw)) {
					t.Errorf("manifest %d holds a secret reference", i)
				}
				meta := m["metadata"].(map[string]interface{})
				name := meta["name"].(string)
				if errs := validation.IsDNS1035Label(name); len(errs) > 0 {
					t.Errorf("manifest %d's name %s: %v", i, name, errs)
				}
				if labels, _ := meta["labels"].(map[string]interface{}); labels["app.kubernetes.io/managed-by"] != "plinth" {
					t.Errorf("manifest %d (%s) is not labelled managed-by plinth", i, m["kind"])
				}
				switch m["kind"] {
				case "Secret":
					secretData[name], _ = m["data"].(map[string]interface{})
				case "StatefulSet":
					checkStatefulSet(t, m)
				}
			}
			for output, ref := range secrets {
				value, ok := secretData[ref.Name][ref.Key].(string)
				if !ok {
					t.Errorf("the output %s names the Secret %s key %s, which the manifests do not create", output, ref.Name, ref.Key)
					continue
				}
				if _, err := base64.StdEncoding.DecodeString(value); err != nil {
					t.Errorf("the Secret %s key %s is not base64", ref.Name, ref.Key)
				}
			}
		})
	}
}

// checkStatefulSet checks what a StatefulSet of a built-in needs: a name short enough for its
// pods' revision label, and a readiness probe and an image on every container.
func checkStatefulSet(t *testing.T, m map[string]interface{}) {
	t.Helper()
	name := m["metadata"].(map[string]interface{})["name"].(string)
	if len(name) > 52 {
		t.Errorf("the StatefulSet name %s is longer than 52 characters", name)
	}
	spec := m["spec"].(map[string]interface{})
	pod := spec["template"].(map[string]interface{})["spec"].(map[string]interface{})
	for _, c := range pod["containers"].([]interface{}) {
		c := c.(map[string]interface{})
		if c["readinessProbe"] == nil {
			t.Errorf("the container %s has no readiness probe", c["name"])
		}
		if image, _ := c["image"].(string); !strings.Contains(image, "/") || !strings.Contains(image, ":") {
			t.Errorf("the container %s's image %q is not a full reference with a tag", c["name"], image)
		}
	}
}

// Object names fit whatever the workload is called: a long workload name is cut, the Guid kept.
func TestBuiltInLongWorkloadName(t *testing.T) {
	specs, _ := BuiltIn()
	for _, spec := range specs {
		if spec.Type == "environment" || spec.Type == "service" {
			continue
		}
		data := sampleData(spec.Type)
		data.SourceWorkload = strings.Repeat("w", 63)
		r, err := mustCompile(t, spec).Render(data)
		if err != nil {
			t.Fatal(err)
		}
		name := r.State["name"].(string)
		if len(name) > 52 || !strings.HasSuffix(name, "-1b4e28ba") || len(validation.IsDNS1035Label(name)) > 0 {
			t.Errorf("%s: name %q", spec.Type, name)
		}
	}
}

func builtIn(t *testing.T, typ string) *Template {
	specs, err := BuiltIn()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range specs {
		if s.Type == typ {
			return mustCompile(t, s)
		}
	}
	t.Fatalf("no built-in %s", typ)
	return nil
}

func TestBuiltInEnvironment(t *testing.T) {
	tmpl := builtIn(t, "environment")
	data := sampleData("environment")
	data.Params = map[string]interface{}{"LOG_LEVEL": "debug", "REPLICAS": int64(3), "API_KEY": EncodeSecretRef("keys", "api"), "EMPTY": ""}
	r, err := tmpl.Render(data)
	if err != nil {
		t.Fatal(err)
	}
	values, secrets, err := SplitOutputs(r.Outputs)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"LOG_LEVEL": "debug", "REPLICAS": "3", "EMPTY": ""}; !reflect.DeepEqual(values, want) {
		t.Errorf("values = %v, want %v", values, want)
	}
	if want := map[string]SecretRef{"API_KEY": {Name: "keys", Key: "api"}}; !reflect.DeepEqual(secrets, want) {
		t.Errorf("secrets = %v, want %v", secrets, want)
	}
	if len(r.Manifests) != 0 {
		t.Errorf("manifests = %v, want none", r.Manifests)
	}
	r, err = tmpl.Render(sampleData("environment"))
	if err != nil || len(r.Outputs) != 0 {
		t.Errorf("without params: %v, %v; want no outputs", r, err)
	}
}

func TestBuiltInService(t *testing.T) {
	tmpl := builtIn(t, "service")
	data := sampleData("service")
	data.Id = "checkout-service.payments"
	data.WorkloadServices["payments"] = NetworkService{ServiceName: "payments-svc"}
	r, err := tmpl.Render(data)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(r.Outputs, map[string]interface{}{"name": "payments-svc"}) {
		t.Errorf("outputs = %v", r.Outputs)
	}

	data.Id = "checkout-service.ledger"
	_, err = tmpl.Render(data)
	var re *RenderError
	if !errors.As(err, &re) || re.Message != "no workload named ledger is in the namespace" {
		t.Errorf("got %v, want the unknown workload's sentence", err)
	}
	data.WorkloadServices = nil
	if _, err = tmpl.Render(data); !errors.As(err, &re) {
		t.Errorf("without services: got %v, want a RenderError", err)
	}
}

// hostileValues are what someone who edits a resource's state Secret (any editor of its
// namespace) might write into it to add objects or fields to the manifests applied with
// plinth-controller's identity: a line break and a list item, a line break and a key, flow
// syntax, quotes that end a quoted value.
var hostileValues = []string{
	"x\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: injected}",
	"x\n  injected: true",
	"x\ninjected: true",
	"x, injected: true",
	"x}, {injected: true",
	`x", "injected": "y`,
	"x' injected: 'y",
	"apiVersion: v1\nkind: Secret\nmetadata: {name: injected}",
}

// A built-in provisioner's state is data: whatever a state value holds, the manifests have the
// same objects with the same fields, and the value lands whole where the template puts it.
func TestBuiltInsKeepTheStateAsData(t *testing.T) {
	specs, err := BuiltIn()
	if err != nil {
		t.Fatal(err)
	}
	for _, spec := range specs {
		if spec.State == "" {
			continue
		}
		t.Run(spec.Type, func(t *testing.T) {
			tmpl := mustCompile(t, spec)
			first, err := tmpl.Render(sampleData(spec.Type))
			if err != nil {
				t.Fatal(err)
			}
			for key := range first.State {
				for _, hostile := range hostileValues {
					data := sampleData(spec.Type)
					data.State = map[string]interface{}{}
					for k, v := range first.State {
						data.State[k] = v
					}
					data.State[key] = hostile
					r, err := tmpl.Render(data)
					if err != nil {
						t.Errorf("state %s = %q: %v", key, hostile, err)
						continue
					}
					if r.State[key] != hostile {
						t.Errorf("state %s = %q is kept as %q", key, hostile, r.State[key])
					}
					if !reflect.DeepEqual(shape(r.Manifests), shape(first.Manifests)) {
						t.Errorf("state %s = %q changes the manifests' objects or fields:\n%v", key, hostile, r.Manifests)
					}
					if !reflect.DeepEqual(shape(r.Outputs), shape(first.Outputs)) {
						t.Errorf("state %s = %q changes the outputs: %v", key, hostile, r.Outputs)
					}
					if key == "name" && r.Manifests[0]["metadata"].(map[string]interface{})["name"] != hostile {
						t.Errorf("state name = %q is not the first object's name: %v", hostile, r.Manifests[0]["metadata"])
					}
				}
			}
		})
	}
}

// shape is v with every scalar left out: the maps' keys and the lists' lengths, all the way down.
func shape(v interface{}) interface{} {
	switch x := v.(type) {
	case map[string]interface{}:
		out := map[string]interface{}{}
		for k, e := range x {
			out[k] = shape(e)
		}
		return out
	case []interface{}:
		out := make([]interface{}, len(x))
		for i, e := range x {
			out[i] = shape(e)
		}
		return out
	case []map[string]interface{}:
		out := make([]interface{}, len(x))
		for i, e := range x {
			out[i] = shape(e)
		}
		return out
	}
	return nil
}
