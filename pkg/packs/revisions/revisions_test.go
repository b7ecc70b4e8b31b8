package revisions

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	goruntime "runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/plinth-dev/plinth/pkg/apis/infrastructure/v1alpha1"
)

const (
	ns   = "platform"
	pack = "web"
	// secretMarker is in every test object; no error may ever show it.
	secretMarker = "hunter2-do-not-show"
)

// objects is n rendered objects as a chart of n objects renders them: Deployments, Services,
// ConfigMaps and Secrets with Helm's labels, minor naming the Kubernetes version rendered for.
func objects(tb testing.TB, n int, minor string) []json.RawMessage {
	tb.Helper()
	labels := func(name string) map[string]any {
		return map[string]any{
			"app.kubernetes.io/name": name, "app.kubernetes.io/instance": "web", "app.kubernetes.io/version": "1.4.0",
			"app.kubernetes.io/managed-by": "Helm", "helm.sh/chart": "web-1.4.0",
		}
	}
	out := make([]json.RawMessage, 0, n)
	for i := range n {
		name := fmt.Sprintf("web-%03d", i)
		meta := map[string]any{"name": name, "namespace": "apps", "labels": labels(name), "annotations": map[string]any{"rendered-for": minor}}
		var obj map[string]any
		switch i % 4 {
		case 0:
			obj = map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta, "spec": map[string]any{
				"replicas": 2, "selector": map[string]any{"matchLabels": map[string]any{"app.kubernetes.io/name": name}},
				"template": map[string]any{"metadata": map[string]any{"labels": labels(name)}, "spec": map[string]any{
					"containers": []any{map[string]any{
						"name": "app", "image": fmt.Sprintf("registry.example.com/apps/%s:1.4.0", name),
						"ports":          []any{map[string]any{"name": "http", "containerPort": 8080}},
						"env":            []any{map[string]any{"name": "LOG_LEVEL", "value": "info"}, map[string]any{"name": "INDEX", "value": fmt.Sprint(i)}},
						"resources":      map[string]any{"requests": map[string]any{"cpu": "100m", "memory": "128Mi"}, "limits": map[string]any{"memory": "256Mi"}},
						"readinessProbe": map[string]any{"httpGet": map[string]any{"path": "/healthz", "port": "http"}},
					}},
				}},
			}}
		case 1:
			obj = map[string]any{"apiVersion": "v1", "kind": "Service", "metadata": meta, "spec": map[string]any{
				"selector": map[string]any{"app.kubernetes.io/name": name},
				"ports":    []any{map[string]any{"name": "http", "port": 80, "targetPort": "http"}},
			}}
		case 2:
			obj = map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": map[string]any{
				"config.yaml": fmt.Sprintf("server:\n  port: 8080\n  name: %s\nfeatures:\n  cache: true\n", name),
			}}
		default:
			obj = map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": meta, "type": "Opaque",
				"stringData": map[string]any{"password": fmt.Sprintf("%s-%d", secretMarker, i)}}
		}
		data, err := json.Marshal(obj)
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, data)
	}
	return out
}

func revision(tb testing.TB, number int64, n int) *Revision {
	tb.Helper()
	return &Revision{
		Number: number, Version: "v1.4.0", Digest: fmt.Sprintf("sha256:%064d", number),
		HelmVersion: "v3.22.0", ChartName: "web", ChartURL: "oci://localhost:5000/charts", ChartVersion: "1.4.0",
		RenderedAt: metav1.NewTime(time.Date(2026, 11, 23, 10, 0, int(number), 0, time.UTC)),
		Renders:    map[string][]json.RawMessage{"v1.36": objects(tb, n, "v1.36"), "v1.37": objects(tb, n, "v1.37")},
	}
}

func TestRoundTrip(t *testing.T) {
	client := fake.NewClientset()
	s := NewStore(client)
	ctx := context.Background()
	want := revision(t, 3, 200)
	// The time is kept to the second.
	want.RenderedAt = metav1.NewTime(want.RenderedAt.Add(123 * time.Millisecond))
	if err := s.Save(ctx, ns, pack, want); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, ns, pack, 3)
	if err != nil {
		t.Fatal(err)
	}
	want.RenderedAt = metav1.NewTime(want.RenderedAt.Truncate(time.Second))
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("Get returned another revision (-saved +got):\n%s", diff)
	}

	secret, err := client.CoreV1().Secrets(ns).Get(ctx, "web.v3", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if secret.Type != SecretType || !ptr.Deref(secret.Immutable, false) || len(secret.OwnerReferences) != 0 {
		t.Errorf("Secret type %q, immutable %v, owners %v; want %q, immutable, no owners", secret.Type, secret.Immutable, secret.OwnerReferences, SecretType)
	}
	if diff := cmp.Diff(map[string]string{v1alpha1.LabelPack: "web", LabelRevision: "3"}, secret.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	wantAnnotations := map[string]string{
		"infrastructure.ontai.dev/version":     "v1.4.0",
		"infrastructure.ontai.dev/digest":      want.Digest,
		"infrastructure.ontai.dev/rendered-at": "2026-11-23T10:00:03Z",
	}
	if diff := cmp.Diff(wantAnnotations, secret.Annotations); diff != "" {
		t.Errorf("annotations (-want +got):\n%s", diff)
	}
	if len(secret.Data) != 1 || secret.Data[DataKey] == nil {
		t.Errorf("Secret data keys %v, want only %q", slices.Collect(maps.Keys(secret.Data)), DataKey)
	}
}

// TestSize checks that a revision of 200 objects rendered for two Kubernetes versions keeps
// far below a Secret's 1 MiB.
func TestSize(t *testing.T) {
	rev := revision(t, 1, 200)
	raw, err := json.Marshal(rev)
	if err != nil {
		t.Fatal(err)
	}
	data, err := encode(rev)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("200 objects × 2 Kubernetes versions: %d bytes of JSON, %d gzipped", len(raw), len(data))
	if len(data) > corev1.MaxSecretSize/10 || len(data)*5 > len(raw) {
		t.Errorf("gzipped %d bytes of JSON to %d, want at most a tenth of a Secret's %d and a fifth of the JSON", len(raw), len(data), corev1.MaxSecretSize)
	}
}

func TestList(t *testing.T) {
	client := fake.NewClientset(
		// None of these are revisions of pack web.
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "web.v7", Namespace: ns, Labels: map[string]string{v1alpha1.LabelPack: pack, LabelRevision: "7"}}, Type: corev1.SecretTypeOpaque},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: ns, Labels: map[string]string{v1alpha1.LabelPack: pack, LabelRevision: "8"}}, Type: SecretType},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "web.v9", Namespace: ns, Labels: map[string]string{v1alpha1.LabelPack: pack, LabelRevision: "x"}}, Type: SecretType},
	)
	s := NewStore(client)
	ctx := context.Background()
	for _, n := range []int64{2, 10, 1, 3} {
		if err := s.Save(ctx, ns, pack, revision(t, n, 2)); err != nil {
			t.Fatal(err)
		}
	}
	// Another pack's revision and the same pack's in another namespace.
	if err := s.Save(ctx, ns, "web2", revision(t, 11, 2)); err != nil {
		t.Fatal(err)
	}
	if err := s.Save(ctx, "elsewhere", pack, revision(t, 12, 2)); err != nil {
		t.Fatal(err)
	}
	// List reads no data: it works on Secrets whose data is gone.
	for _, n := range []string{"web.v1", "web.v2", "web.v3", "web.v10"} {
		secret, err := client.CoreV1().Secrets(ns).Get(ctx, n, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		secret.Data = nil
		if _, err := client.CoreV1().Secrets(ns).Update(ctx, secret, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	got, err := s.List(ctx, ns, pack)
	if err != nil {
		t.Fatal(err)
	}
	var want []RevisionInfo
	for _, n := range []int64{10, 3, 2, 1} {
		r := revision(t, n, 0)
		want = append(want, RevisionInfo{Number: n, Version: r.Version, Digest: r.Digest, RenderedAt: r.RenderedAt})
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("List (-want +got):\n%s", diff)
	}

	empty, err := s.List(ctx, ns, "nothing")
	if err != nil || len(empty) != 0 {
		t.Errorf("List of a pack without revisions = %v, %v; want none", empty, err)
	}
}

func TestListCorruptAnnotations(t *testing.T) {
	for _, tc := range []struct {
		name        string
		annotations map[string]string
	}{
		{"none", nil},
		{"no digest", map[string]string{annotationVersion: "v1.0.0", annotationRenderedAt: "2026-11-23T10:00:00Z"}},
		{"no version", map[string]string{annotationDigest: "sha256:0", annotationRenderedAt: "2026-11-23T10:00:00Z"}},
		{"bad time", map[string]string{annotationVersion: "v1.0.0", annotationDigest: "sha256:0", annotationRenderedAt: "yesterday"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset(&corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: "web.v1", Namespace: ns, Labels: map[string]string{v1alpha1.LabelPack: pack, LabelRevision: "1"}, Annotations: tc.annotations},
				Type:       SecretType,
			})
			_, err := NewStore(client).List(context.Background(), ns, pack)
			if err == nil || !strings.Contains(err.Error(), "revision 1 of pack platform/web is corrupt") {
				t.Fatalf("List error %v, want revision 1 corrupt", err)
			}
		})
	}
}

func numbers(t *testing.T, s *Store, namespace, pack string) []int64 {
	t.Helper()
	infos, err := s.List(context.Background(), namespace, pack)
	if err != nil {
		t.Fatal(err)
	}
	var ns []int64
	for _, i := range infos {
		ns = append(ns, i.Number)
	}
	return ns
}

func TestPrune(t *testing.T) {
	foreign := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "web.v100", Namespace: ns, Labels: map[string]string{v1alpha1.LabelPack: pack, LabelRevision: "100"}}, Type: corev1.SecretTypeOpaque}
	for _, tc := range []struct {
		name    string
		keep    int
		protect []int64
		want    []int64
	}{
		{"keep two", 2, nil, []int64{6, 5}},
		{"keep two, protect older", 2, []int64{1, 3}, []int64{6, 5, 3, 1}},
		{"protect a kept one", 2, []int64{6}, []int64{6, 5}},
		{"protect what is not kept", 2, []int64{42}, []int64{6, 5}},
		{"keep none", 0, nil, nil},
		{"keep none, protect one", 0, []int64{4}, []int64{4}},
		{"keep more than there are", 10, nil, []int64{6, 5, 4, 3, 2, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset(foreign.DeepCopy())
			s := NewStore(client)
			ctx := context.Background()
			for n := int64(1); n <= 6; n++ {
				if err := s.Save(ctx, ns, pack, revision(t, n, 1)); err != nil {
					t.Fatal(err)
				}
				if err := s.Save(ctx, ns, "other", revision(t, n, 1)); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Prune(ctx, ns, pack, tc.keep, tc.protect...); err != nil {
				t.Fatal(err)
			}
			if got := numbers(t, s, ns, pack); !slices.Equal(got, tc.want) {
				t.Errorf("kept %v, want %v", got, tc.want)
			}
			if got := numbers(t, s, ns, "other"); len(got) != 6 {
				t.Errorf("another pack keeps %v, want all 6", got)
			}
			if _, err := client.CoreV1().Secrets(ns).Get(ctx, foreign.Name, metav1.GetOptions{}); err != nil {
				t.Errorf("a Secret that is not a revision was touched: %v", err)
			}
		})
	}
	if err := NewStore(fake.NewClientset()).Prune(context.Background(), ns, pack, -1); err == nil {
		t.Error("Prune keeping -1 revisions succeeded")
	}
}

// TestPruneFailures checks that Prune deletes what it can past a failure, reports the failure,
// and takes a revision deleted meanwhile as deleted.
func TestPruneFailures(t *testing.T) {
	client := fake.NewClientset()
	s := NewStore(client)
	ctx := context.Background()
	for n := int64(1); n <= 4; n++ {
		if err := s.Save(ctx, ns, pack, revision(t, n, 1)); err != nil {
			t.Fatal(err)
		}
	}
	client.PrependReactor("delete", "secrets", func(a k8stesting.Action) (bool, runtime.Object, error) {
		switch a.(k8stesting.DeleteAction).GetName() {
		case "web.v2":
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "web.v2", errors.New("no"))
		case "web.v1":
			return true, nil, apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, "web.v1")
		}
		return false, nil, nil
	})
	err := s.Prune(ctx, ns, pack, 1)
	if err == nil || !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "web.v2") || strings.Contains(err.Error(), "web.v1") {
		t.Fatalf("Prune error %v, want only web.v2's Forbidden", err)
	}
	if got := numbers(t, s, ns, pack); !slices.Equal(got, []int64{4, 2, 1}) {
		t.Errorf("kept %v, want [4 2 1] (2 failed, 1 was reported gone)", got)
	}
}

func TestDeleteAll(t *testing.T) {
	foreign := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "web.v100", Namespace: ns, Labels: map[string]string{v1alpha1.LabelPack: pack, LabelRevision: "100"}}, Type: corev1.SecretTypeOpaque}
	client := fake.NewClientset(foreign)
	s := NewStore(client)
	ctx := context.Background()
	for n := int64(1); n <= 3; n++ {
		for _, p := range []string{pack, "other"} {
			if err := s.Save(ctx, ns, p, revision(t, n, 1)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := s.DeleteAll(ctx, ns, pack); err != nil {
		t.Fatal(err)
	}
	if got := numbers(t, s, ns, pack); len(got) != 0 {
		t.Errorf("kept %v after DeleteAll", got)
	}
	if got := numbers(t, s, ns, "other"); len(got) != 3 {
		t.Errorf("another pack keeps %v, want 3", got)
	}
	if _, err := client.CoreV1().Secrets(ns).Get(ctx, foreign.Name, metav1.GetOptions{}); err != nil {
		t.Errorf("a Secret that is not a revision was deleted: %v", err)
	}
	if err := s.DeleteAll(ctx, ns, pack); err != nil {
		t.Errorf("DeleteAll with nothing to delete: %v", err)
	}
}

func TestSaveAgain(t *testing.T) {
	client := fake.NewClientset()
	s := NewStore(client)
	ctx := context.Background()
	rev := revision(t, 1, 3)
	if err := s.Save(ctx, ns, pack, rev); err != nil {
		t.Fatal(err)
	}
	if err := s.Save(ctx, ns, pack, rev); err != nil {
		t.Fatalf("saving the same revision again: %v", err)
	}
	for name, change := range map[string]func(*Revision){
		"digest":  func(r *Revision) { r.Digest = "sha256:other" },
		"version": func(r *Revision) { r.Version = "v1.4.1" },
	} {
		other := revision(t, 1, 3)
		change(other)
		err := s.Save(ctx, ns, pack, other)
		if !errors.Is(err, ErrNumberTaken) {
			t.Errorf("saving revision 1 with another %s: error %v, want ErrNumberTaken", name, err)
		}
	}
	// The kept revision is the first one.
	got, err := s.Get(ctx, ns, pack, 1)
	if err != nil || got.Digest != rev.Digest || got.Version != rev.Version {
		t.Errorf("Get = %v, %v; want the first save", got, err)
	}

	// A Secret of the same name that is not a revision is not taken for one.
	client = fake.NewClientset(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "web.v1", Namespace: ns}, Type: corev1.SecretTypeOpaque})
	err = NewStore(client).Save(ctx, ns, pack, rev)
	if err == nil || errors.Is(err, ErrNumberTaken) || !strings.Contains(err.Error(), "not a pack revision") {
		t.Errorf("saving over a Secret that is not a revision: error %v", err)
	}
}

func TestSaveRefuses(t *testing.T) {
	ctx := context.Background()
	big := revision(t, 1, 0)
	// Random bytes do not compress: 1 MiB of them, base64-encoded, gzip to more than 1 MiB.
	noise := make([]byte, corev1.MaxSecretSize)
	if _, err := rand.Read(noise); err != nil {
		t.Fatal(err)
	}
	obj, _ := json.Marshal(map[string]string{"data": base64.StdEncoding.EncodeToString(noise)})
	big.Renders = map[string][]json.RawMessage{"v1.37": {obj}}

	for _, tc := range []struct {
		name, namespace, pack string
		rev                   *Revision
		want                  string
	}{
		{"nil", ns, pack, nil, "no revision"},
		{"number 0", ns, pack, &Revision{Version: "v1.0.0", Digest: "sha256:0"}, "start at 1"},
		{"no digest", ns, pack, &Revision{Number: 1, Version: "v1.0.0"}, "needs a version and a digest"},
		{"no version", ns, pack, &Revision{Number: 1, Digest: "sha256:0"}, "needs a version and a digest"},
		{"bad pack", ns, "Web", revision(t, 1, 1), `the pack name "Web" is not a DNS label`},
		{"empty pack", ns, "", revision(t, 1, 1), "is not a DNS label"},
		{"bad namespace", "a/b", pack, revision(t, 1, 1), "is not a DNS label"},
		{"too large", ns, pack, big, "more than the 1048576 a Secret may hold"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset()
			err := NewStore(client).Save(ctx, tc.namespace, tc.pack, tc.rev)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Save error %v, want one with %q", err, tc.want)
			}
			if n := len(client.Actions()); n != 0 {
				t.Errorf("Save called the API server %d times", n)
			}
		})
	}
}

func TestSaveRefusesMoreThanGetReads(t *testing.T) {
	defer func(old int) { maxDecodedSize = old }(maxDecodedSize)
	maxDecodedSize = 10 << 10
	err := NewStore(fake.NewClientset()).Save(context.Background(), ns, pack, revision(t, 1, 50))
	if err == nil || !strings.Contains(err.Error(), "more than the 10240 a revision may hold") {
		t.Fatalf("Save error %v", err)
	}
}

func TestGetNotKept(t *testing.T) {
	s := NewStore(fake.NewClientset())
	_, err := s.Get(context.Background(), ns, pack, 4)
	if !apierrors.IsNotFound(err) {
		t.Fatalf("Get error %v, want NotFound", err)
	}
	if want := "revision 4 of pack platform/web is not kept"; err.Error() != want {
		t.Errorf("Get error %q, want %q", err, want)
	}
	for _, n := range []int64{0, -1} {
		if _, err := s.Get(context.Background(), ns, pack, n); err == nil || apierrors.IsNotFound(err) {
			t.Errorf("Get of revision %d: error %v, want a refusal", n, err)
		}
	}
}

func gz(tb testing.TB, data []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(data); err != nil {
		tb.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

func TestGetCorrupt(t *testing.T) {
	defer func(old int) { maxDecodedSize = old }(maxDecodedSize)
	maxDecodedSize = 1 << 20
	good, err := encode(revision(t, 5, 10))
	if err != nil {
		t.Fatal(err)
	}
	otherNumber, err := encode(revision(t, 6, 1))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"no data", nil, `no "revision" data`},
		{"not gzip", []byte(`{"password":"` + secretMarker + `"}`), "not gzip-compressed"},
		{"truncated", good[:len(good)/2], "not a complete gzip stream"},
		{"not JSON", gz(t, []byte(`{"renders": {"v1.37": [{"password": "`+secretMarker+`" x`)), "not the JSON of a revision"},
		{"wrong JSON", gz(t, []byte(`{"number": "`+secretMarker+`"}`)), "not the JSON of a revision"},
		{"another number", otherNumber, "records revision 6"},
		{"bomb", gz(t, bytes.Repeat([]byte{' '}, maxDecodedSize+1)), "decompresses to more than 1048576 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset(&corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: "web.v5", Namespace: ns, Labels: map[string]string{v1alpha1.LabelPack: pack, LabelRevision: "5"}},
				Type:       SecretType,
				Data:       map[string][]byte{DataKey: tc.data},
			})
			_, err := NewStore(client).Get(context.Background(), ns, pack, 5)
			if err == nil || !strings.Contains(err.Error(), "revision 5 of pack platform/web is corrupt") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Get error %v, want corrupt with %q", err, tc.want)
			}
			if strings.Contains(err.Error(), secretMarker) {
				t.Fatalf("Get error shows the Secret's data: %v", err)
			}
		})
	}
}

// TestDecodeBomb checks that decode stops reading at its limit: a small Secret may decompress
// to far more than the process should hold.
func TestDecodeBomb(t *testing.T) {
	defer func(old int) { maxDecodedSize = old }(maxDecodedSize)
	maxDecodedSize = 1 << 20
	bomb := gz(t, bytes.Repeat([]byte{' '}, 64<<20))
	var before, after goruntime.MemStats
	goruntime.ReadMemStats(&before)
	_, err := decode(bomb)
	goruntime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), "decompresses to more than") {
		t.Fatalf("decode error %v", err)
	}
	if allocated := after.TotalAlloc - before.TotalAlloc; allocated > 16<<20 {
		t.Errorf("decoding %d bytes that decompress to 64 MiB allocated %d bytes", len(bomb), allocated)
	}
}

func TestGetNotARevision(t *testing.T) {
	for name, secret := range map[string]*corev1.Secret{
		"another type":   {ObjectMeta: metav1.ObjectMeta{Name: "web.v5", Namespace: ns, Labels: map[string]string{v1alpha1.LabelPack: pack, LabelRevision: "5"}}, Type: corev1.SecretTypeOpaque},
		"no labels":      {ObjectMeta: metav1.ObjectMeta{Name: "web.v5", Namespace: ns}, Type: SecretType},
		"another number": {ObjectMeta: metav1.ObjectMeta{Name: "web.v5", Namespace: ns, Labels: map[string]string{v1alpha1.LabelPack: pack, LabelRevision: "6"}}, Type: SecretType},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := NewStore(fake.NewClientset(secret)).Get(context.Background(), ns, pack, 5)
			if err == nil || apierrors.IsNotFound(err) || !strings.Contains(err.Error(), "is not revision 5 of pack web") {
				t.Fatalf("Get error %v", err)
			}
		})
	}
}

func BenchmarkSave(b *testing.B) {
	s := NewStore(fake.NewClientset())
	rev := revision(b, 1, 200)
	ctx := context.Background()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		rev.Number = int64(i + 1)
		if err := s.Save(ctx, ns, pack, rev); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGet(b *testing.B) {
	s := NewStore(fake.NewClientset())
	ctx := context.Background()
	if err := s.Save(ctx, ns, pack, revision(b, 1, 200)); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Get(ctx, ns, pack, 1); err != nil {
			b.Fatal(err)
		}
	}
}

// A revision is read from its Secret once: it never changes. Deleting a pack's revisions
// forgets them, so a pack created again under the name reads its own revision 1.
func TestGetRemembersUntilDeleted(t *testing.T) {
	client := fake.NewClientset()
	s := NewStore(client)
	ctx := context.Background()
	if err := s.Save(ctx, ns, pack, revision(t, 1, 3)); err != nil {
		t.Fatal(err)
	}
	gets := func() int {
		n := 0
		for _, a := range client.Actions() {
			if a.GetVerb() == "get" && a.GetResource().Resource == "secrets" {
				n++
			}
		}
		return n
	}
	for range 3 {
		if _, err := s.Get(ctx, ns, pack, 1); err != nil {
			t.Fatal(err)
		}
	}
	if n := gets(); n != 1 {
		t.Errorf("three Gets read the Secret %d times, want once", n)
	}
	if err := s.DeleteAll(ctx, ns, pack); err != nil {
		t.Fatal(err)
	}
	again := revision(t, 1, 5)
	again.Digest = "sha256:other"
	if err := s.Save(ctx, ns, pack, again); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, ns, pack, 1)
	if err != nil {
		t.Fatal(err)
	}
	if got.Digest != "sha256:other" {
		t.Errorf("after DeleteAll, Get returned the old revision 1 (digest %s)", got.Digest)
	}
}
