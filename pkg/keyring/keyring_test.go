package keyring

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func mustKey(t *testing.T, id string) FileKey {
	t.Helper()
	k, err := GenerateKey(id)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestSealOpenAndRotation(t *testing.T) {
	k1, k2 := mustKey(t, "k1"), mustKey(t, "k2")
	old, err := New(File{Keys: []FileKey{k1}})
	if err != nil {
		t.Fatal(err)
	}
	secret := []byte("apiVersion: v1\nkind: Config\n")
	id, sealed, err := old.Seal(secret, []byte("cluster/local"))
	if err != nil || id != "k1" || bytes.Contains(sealed, []byte("kind: Config")) {
		t.Fatalf("seal: id %q err %v", id, err)
	}
	_, again, _ := old.Seal(secret, []byte("cluster/local"))
	if bytes.Equal(sealed, again) {
		t.Error("two seals of the same value are equal: the nonce is not random")
	}

	// Rotation: k2 first encrypts; k1 still decrypts what it encrypted.
	rotated, err := New(File{Keys: []FileKey{k2, k1}})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := rotated.Open(id, sealed, []byte("cluster/local")); err != nil || !bytes.Equal(got, secret) {
		t.Fatalf("old ciphertext after rotation: %q %v", got, err)
	}
	if id, _, _ := rotated.Seal(secret, nil); id != "k2" {
		t.Errorf("rotated keyring encrypts with %q, want k2", id)
	}

	// After the old key is dropped, its ciphertexts no longer open.
	dropped, _ := New(File{Keys: []FileKey{k2}})
	if _, err := dropped.Open(id, sealed, []byte("cluster/local")); !errors.Is(err, ErrUnknownKey) {
		t.Errorf("dropped key: %v", err)
	}
}

func TestOpenRefusesTamperingAndOtherObjects(t *testing.T) {
	k, _ := New(File{Keys: []FileKey{mustKey(t, "k1")}})
	id, sealed, _ := k.Seal([]byte("secret"), []byte("cluster/a"))
	if _, err := k.Open(id, sealed, []byte("cluster/b")); err == nil {
		t.Error("a ciphertext opened for another object")
	}
	tampered := append([]byte(nil), sealed...)
	tampered[len(tampered)-1] ^= 1
	if _, err := k.Open(id, tampered, []byte("cluster/a")); err == nil {
		t.Error("a tampered ciphertext opened")
	}
	if _, err := k.Open(id, sealed[:5], []byte("cluster/a")); err == nil || !strings.Contains(err.Error(), "truncated") {
		t.Errorf("truncated: %v", err)
	}
}

func TestBadKeyFiles(t *testing.T) {
	good := mustKey(t, "k1")
	cases := map[string]File{
		"no keys":      {},
		"duplicate id": {Keys: []FileKey{good, good}},
		"bad id":       {Keys: []FileKey{{ID: "a key", Secret: good.Secret}}},
		"short key":    {Keys: []FileKey{{ID: "k", Secret: "c2hvcnQ="}}},
		"not base64":   {Keys: []FileKey{{ID: "k", Secret: "!!!"}}},
	}
	for name, f := range cases {
		if _, err := New(f); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestLoadAndWriteFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys.yaml")
	if err := WriteFile(path, File{Keys: []FileKey{mustKey(t, "k1")}}); err != nil {
		t.Fatal(err)
	}
	if info, _ := os.Stat(path); info.Mode().Perm() != 0o600 {
		t.Errorf("key file mode %v", info.Mode().Perm())
	}
	k, err := Load(path)
	if err != nil || k.Primary() != "k1" || !k.Has("k1") || k.Has("k2") {
		t.Fatalf("load: %v", err)
	}
	if err := os.WriteFile(path, []byte("keys: [{id: k1, secret: x, extra: 1}]"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); err == nil {
		t.Error("unknown field in the key file accepted")
	}
}
