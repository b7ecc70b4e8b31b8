package provisioners

import (
	"reflect"
	"strings"
	"testing"

	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
)

func TestEncodeSecretRef(t *testing.T) {
	// The encoding is score-k8s's, byte for byte, so that hand-written refs work too.
	if got, want := EncodeSecretRef("pg-web-1a2b3c4d", "password"), "\U0001F510\U0001F4ACpg-web-1a2b3c4d_password\U0001F4AC\U0001F510"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if !ContainsSecretRef("x" + EncodeSecretRef("a", "b") + "y") {
		t.Error("ContainsSecretRef missed a ref inside text")
	}
	if ContainsSecretRef("plain text 💬") {
		t.Error("ContainsSecretRef found a ref in plain text")
	}
}

// A ref made by the template function comes back out of SplitOutputs as the same Secret key.
func TestSecretRefRoundTrip(t *testing.T) {
	tmpl := mustCompile(t, v1b1.ProvisionerSpec{Outputs: `password: {{ encodeSecretRef "db-creds" "pass_word" }}
alt: 🔐💬handmade_key💬🔐`})
	r, err := tmpl.Render(Data{})
	if err != nil {
		t.Fatal(err)
	}
	values, secrets, err := SplitOutputs(r.Outputs)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]SecretRef{"password": {Name: "db-creds", Key: "pass_word"}, "alt": {Name: "handmade", Key: "key"}}
	if len(values) != 0 || !reflect.DeepEqual(secrets, want) {
		t.Errorf("got values %v, secrets %v; want secrets %v", values, secrets, want)
	}
}

func TestSplitOutputs(t *testing.T) {
	values, secrets, err := SplitOutputs(map[string]interface{}{
		"host":   "db",
		"port":   int64(5432),
		"ratio":  1.5,
		"big":    1e6,
		"tls":    true,
		"none":   nil,
		"nested": map[string]interface{}{"b": []interface{}{"x", int64(1)}, "a": "y"},
		"list":   []interface{}{"a", "b"},
		"pw":     EncodeSecretRef("s", "k"),
	})
	if err != nil {
		t.Fatal(err)
	}
	wantValues := map[string]string{
		"host": "db", "port": "5432", "ratio": "1.5", "big": "1000000", "tls": "true", "none": "null",
		"nested": `{"a":"y","b":["x",1]}`, "list": `["a","b"]`,
	}
	if !reflect.DeepEqual(values, wantValues) {
		t.Errorf("values = %v, want %v", values, wantValues)
	}
	if !reflect.DeepEqual(secrets, map[string]SecretRef{"pw": {Name: "s", Key: "k"}}) {
		t.Errorf("secrets = %v", secrets)
	}
}

func TestSplitOutputsErrors(t *testing.T) {
	ref := EncodeSecretRef("creds", "password")
	cases := []struct {
		name  string
		value interface{}
		want  string
	}{
		{"text before", "pw=" + ref, "the output bad mixes a secret reference with other text"},
		{"text after", ref + "x", "mixes a secret reference"},
		{"two refs", ref + ref, "mixes a secret reference"},
		{"no end", "🔐💬creds_password", "mixes a secret reference"},
		{"no key", "🔐💬creds💬🔐", "the output bad holds a secret reference without a Secret name and key"},
		{"empty name", "🔐💬_key💬🔐", "without a Secret name and key"},
		{"in a map", map[string]interface{}{"a": ref}, "the output bad holds a secret reference inside a map or list"},
		{"in a list", []interface{}{"a", []interface{}{ref}}, "inside a map or list"},
		{"in a key", map[string]interface{}{ref: "a"}, "inside a map or list"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := SplitOutputs(map[string]interface{}{"bad": tc.value, "good": "x"})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "creds") {
				t.Errorf("the error %q shows the reference", err)
			}
		})
	}
}

func TestSplitMixedOutputs(t *testing.T) {
	conn := "Server=tcp:mssql-web,1433;User ID=sa;Password=" + EncodeSecretRef("mssql-web", "password") + ";" +
		"Token=" + EncodeSecretRef("tokens", "api_key")
	split, err := SplitMixedOutputs(map[string]interface{}{
		"connection": conn, "password": EncodeSecretRef("mssql-web", "password"), "port": 1433,
	})
	if err != nil {
		t.Fatal(err)
	}
	if split.Values["port"] != "1433" || split.Secrets["password"] != (SecretRef{Name: "mssql-web", Key: "password"}) {
		t.Fatalf("split = %+v", split)
	}
	value, err := Assemble(split.Mixed["connection"], func(r SecretRef) ([]byte, error) { return []byte(r.Name + "/" + r.Key), nil })
	if err != nil || string(value) != "Server=tcp:mssql-web,1433;User ID=sa;Password=mssql-web/password;Token=tokens/api_key" {
		t.Fatalf("assembled %q, %v", value, err)
	}
	// SplitOutputs, for callers that cannot keep a whole value secret, still refuses them.
	if _, _, err := SplitOutputs(map[string]interface{}{"connection": conn}); err == nil {
		t.Error("SplitOutputs accepted a mixed output")
	}
	if _, err := SplitMixedOutputs(map[string]interface{}{"bad": "x" + secretRefPrefix + "no-suffix"}); err == nil {
		t.Error("an unterminated reference was accepted")
	}
}
