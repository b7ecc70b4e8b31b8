package cluster

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/storage"

	"github.com/plinth-dev/plinth/pkg/apis/platform"
	"github.com/plinth-dev/plinth/pkg/credentials"
	"github.com/plinth-dev/plinth/pkg/keyring"
)

const plain = "apiVersion: v1\nkind: Config\n# token: do-not-leak\n"

// memStorage keeps one Cluster, as etcd would, for the sealing wrapper to write through.
type memStorage struct {
	storage.Interface
	stored *platform.Cluster
}

func (m *memStorage) Create(_ context.Context, _ string, obj, out runtime.Object, _ uint64) error {
	m.stored = obj.(*platform.Cluster).DeepCopy()
	m.stored.ResourceVersion = "1"
	m.stored.DeepCopyInto(out.(*platform.Cluster))
	return nil
}

func (m *memStorage) GuaranteedUpdate(_ context.Context, _ string, dest runtime.Object, _ bool, _ *storage.Preconditions,
	tryUpdate storage.UpdateFunc, _ runtime.Object) error {
	out, _, err := tryUpdate(m.stored.DeepCopy(), storage.ResponseMeta{})
	if err != nil {
		return err
	}
	m.stored = out.(*platform.Cluster).DeepCopy()
	m.stored.DeepCopyInto(dest.(*platform.Cluster))
	return nil
}

func keys(t *testing.T, ids ...string) (*keyring.Keyring, map[string]keyring.FileKey) {
	t.Helper()
	byID := map[string]keyring.FileKey{}
	var f keyring.File
	for _, id := range ids {
		k, err := keyring.GenerateKey(id)
		if err != nil {
			t.Fatal(err)
		}
		byID[id] = k
		f.Keys = append(f.Keys, k)
	}
	k, err := keyring.New(f)
	if err != nil {
		t.Fatal(err)
	}
	return k, byID
}

func newCluster() *platform.Cluster {
	return &platform.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "east", UID: "uid-1"}, Spec: platform.ClusterSpec{Kubeconfig: plain}}
}

func update(t *testing.T, s *sealingStorage, fn func(*platform.Cluster)) *platform.Cluster {
	t.Helper()
	out := &platform.Cluster{}
	err := s.GuaranteedUpdate(context.Background(), "k", out, false, nil, func(in runtime.Object, _ storage.ResponseMeta) (runtime.Object, *uint64, error) {
		c := in.(*platform.Cluster)
		fn(c)
		return c, nil, nil
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func opened(t *testing.T, k *keyring.Keyring, c *platform.Cluster) string {
	t.Helper()
	id, sealed, ok := openEnvelope(c.Spec.Kubeconfig)
	if !ok {
		t.Fatalf("stored kubeconfig is not sealed: %.40q", c.Spec.Kubeconfig)
	}
	data, err := k.Open(id, sealed, credentials.AdditionalData(c.Name, c.UID))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestSealingStorageEncryptsOnCreateAndKeepsUnchangedEnvelopes(t *testing.T) {
	k1, _ := keys(t, "k1")
	mem := &memStorage{}
	s := &sealingStorage{Interface: mem, keys: k1}
	if err := s.Create(context.Background(), "k", newCluster(), &platform.Cluster{}, 0); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(mem.stored.Spec.Kubeconfig, "do-not-leak") || mem.stored.Status.EncryptionKeyID != "k1" {
		t.Fatalf("stored: %.60q key %q", mem.stored.Spec.Kubeconfig, mem.stored.Status.EncryptionKeyID)
	}
	if got := opened(t, k1, mem.stored); got != plain {
		t.Errorf("decrypted %q", got)
	}
	before := mem.stored.Spec.Kubeconfig
	update(t, s, func(c *platform.Cluster) { c.Spec.Description = "changed" })
	if mem.stored.Spec.Kubeconfig != before {
		t.Error("an update without a new kubeconfig sealed it again: no-op writes would never be skipped")
	}
	update(t, s, func(c *platform.Cluster) { c.Spec.Kubeconfig = plain + "# v2\n" })
	if got := opened(t, k1, mem.stored); got != plain+"# v2\n" {
		t.Errorf("a new kubeconfig was not sealed: %q", got)
	}
	// The ciphertext belongs to this cluster only.
	id, sealed, _ := openEnvelope(mem.stored.Spec.Kubeconfig)
	if _, err := k1.Open(id, sealed, credentials.AdditionalData("east", "other-uid")); err == nil {
		t.Error("the ciphertext opened for another cluster UID")
	}
}

func TestSealingStorageRotatesKeysOnWrite(t *testing.T) {
	k1, byID := keys(t, "k1")
	mem := &memStorage{}
	if err := (&sealingStorage{Interface: mem, keys: k1}).Create(context.Background(), "k", newCluster(), &platform.Cluster{}, 0); err != nil {
		t.Fatal(err)
	}
	k2 := must(keyring.New(keyring.File{Keys: []keyring.FileKey{must(keyring.GenerateKey("k2")), byID["k1"]}}))
	out := update(t, &sealingStorage{Interface: mem, keys: k2}, func(*platform.Cluster) {})
	if out.Status.EncryptionKeyID != "k2" || opened(t, k2, mem.stored) != plain {
		t.Fatalf("not re-encrypted under k2: key %q", out.Status.EncryptionKeyID)
	}
	// A server without the sealing key keeps the value rather than losing it.
	k3, _ := keys(t, "k3")
	before := mem.stored.Spec.Kubeconfig
	out = update(t, &sealingStorage{Interface: mem, keys: k3}, func(c *platform.Cluster) { c.Spec.Description = "x" })
	if mem.stored.Spec.Kubeconfig != before || out.Status.EncryptionKeyID != "k2" {
		t.Error("a write by a server without the key changed the sealed kubeconfig")
	}
}

func TestSealingStorageWithoutKeysRefusesKubeconfigs(t *testing.T) {
	err := (&sealingStorage{Interface: &memStorage{}}).Create(context.Background(), "k", newCluster(), &platform.Cluster{}, 0)
	if !apierrors.IsServiceUnavailable(err) || !strings.Contains(err.Error(), "--encryption-key-file") {
		t.Errorf("err = %v", err)
	}
}

func TestRedactCopiesAndBlanks(t *testing.T) {
	c := newCluster()
	out := redact(c).(*platform.Cluster)
	if out.Spec.Kubeconfig != "" || c.Spec.Kubeconfig != plain {
		t.Errorf("redact changed the original or kept the kubeconfig")
	}
	list := &platform.ClusterList{Items: []platform.Cluster{*newCluster(), *newCluster()}}
	outList := redact(list).(*platform.ClusterList)
	for i := range outList.Items {
		if outList.Items[i].Spec.Kubeconfig != "" || list.Items[i].Spec.Kubeconfig != plain {
			t.Errorf("item %d: redacted %q original %q", i, outList.Items[i].Spec.Kubeconfig, list.Items[i].Spec.Kubeconfig)
		}
	}
	status := &metav1.Status{Message: "x"}
	if redact(status) != status {
		t.Error("other objects must pass unchanged")
	}
}

func TestEnvelopeRejectsMalformedValues(t *testing.T) {
	for _, v := range []string{"", plain, envelopePrefix, envelopePrefix + "k1", envelopePrefix + "k1:***"} {
		if _, _, ok := openEnvelope(v); ok {
			t.Errorf("%q opened as an envelope", v)
		}
	}
	if id, sealed, ok := openEnvelope(envelope("k9", []byte{1, 2, 3})); !ok || id != "k9" || len(sealed) != 3 {
		t.Errorf("round trip: %q %v %v", id, sealed, ok)
	}
}

func TestStripLastApplied(t *testing.T) {
	c := newCluster()
	c.Annotations = map[string]string{lastAppliedAnnotation: `{"apiVersion":"platform.plinth.dev/v1alpha1","kind":"Cluster","spec":{"description":"d","kubeconfig":"do-not-leak"}}`}
	stripLastApplied(c)
	if got := c.Annotations[lastAppliedAnnotation]; strings.Contains(got, "do-not-leak") || !strings.Contains(got, `"description":"d"`) {
		t.Errorf("annotation %q", got)
	}
	c.Annotations[lastAppliedAnnotation] = "not json do-not-leak"
	stripLastApplied(c)
	if _, kept := c.Annotations[lastAppliedAnnotation]; kept {
		t.Error("an unreadable annotation was kept")
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func TestRetainKubeconfigMakesResendingANoOp(t *testing.T) {
	k1, _ := keys(t, "k1")
	mem := &memStorage{}
	if err := (&sealingStorage{Interface: mem, keys: k1}).Create(context.Background(), "k", newCluster(), &platform.Cluster{}, 0); err != nil {
		t.Fatal(err)
	}
	stored := mem.stored
	for name, tc := range map[string]struct{ sent, want string }{
		"left out":  {"", stored.Spec.Kubeconfig},
		"same":      {plain, stored.Spec.Kubeconfig},
		"different": {plain + "# v2\n", plain + "# v2\n"},
	} {
		c := stored.DeepCopy()
		c.Spec.Kubeconfig = tc.sent
		retainKubeconfig(c, stored, k1)
		if c.Spec.Kubeconfig != tc.want {
			t.Errorf("%s: kept %.30q", name, c.Spec.Kubeconfig)
		}
	}
}
