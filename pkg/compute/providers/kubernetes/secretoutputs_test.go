package kubernetes

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
)

// A template provisioner's secret output (encodeSecretRef) names its own Secret and key: the
// container gets that key as a secretKeyRef, and a file that embeds it gets the Secret's value.
func TestSecretOutputsOfTheirOwnSecret(t *testing.T) {
	bindings := map[string]*v1b1.ResourceBinding{"db": {Status: v1b1.ResourceBindingStatus{Outputs: &v1b1.BindingOutputs{
		Metadata: map[string]string{"host": "pg-web"},
		Secrets:  map[string]v1b1.SecretKeyReference{"password": {Name: "pg-web-1a2b3c4d", Key: "POSTGRES_PASSWORD"}},
	}}}}
	env, err := envVar(v1b1.EnvProjection{Name: "PGPASSWORD", From: &v1b1.BindingOutputSource{BindingKey: "db", OutputKey: "password"}}, bindings)
	if err != nil {
		t.Fatal(err)
	}
	if env.Value != "" || env.ValueFrom == nil || env.ValueFrom.SecretKeyRef == nil ||
		env.ValueFrom.SecretKeyRef.Name != "pg-web-1a2b3c4d" || env.ValueFrom.SecretKeyRef.Key != "POSTGRES_PASSWORD" {
		t.Fatalf("env = %+v", env)
	}
	if _, err := envVar(v1b1.EnvProjection{Name: "X", From: &v1b1.BindingOutputSource{BindingKey: "db", OutputKey: "username"}}, bindings); err == nil {
		t.Error("an output the binding does not have was projected")
	}

	secrets := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	_ = secrets.Add(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "pg-web-1a2b3c4d", Namespace: "team-a"},
		Data: map[string][]byte{"POSTGRES_PASSWORD": []byte("s3cret")}})
	r := &Runtime{Secrets: corelisters.NewSecretLister(secrets)}
	content, err := r.fileContent("team-a", v1b1.ContainerFile{Target: "/etc/app.conf", Content: ptr.To("password=${resources.db.password}")}, bindings)
	if err != nil || string(content) != "password=s3cret" {
		t.Fatalf("file content = %q, %v", content, err)
	}
}
