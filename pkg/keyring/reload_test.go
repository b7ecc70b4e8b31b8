package keyring

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestReloadingFollowsTheKeyFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys.yaml")
	k1, _ := GenerateKey("k1")
	if err := WriteFile(path, File{Keys: []FileKey{k1}}); err != nil {
		t.Fatal(err)
	}
	r, err := NewReloading(path, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	clock := time.Now()
	r.now = func() time.Time { return clock }
	id, sealed, err := r.Keyring().Seal([]byte("x"), nil)
	if err != nil || id != "k1" {
		t.Fatalf("seal: %s %v", id, err)
	}
	k2, _ := GenerateKey("k2")
	if err := WriteFile(path, File{Keys: []FileKey{k2, k1}}); err != nil {
		t.Fatal(err)
	}
	if r.Keyring().Primary() != "k1" {
		t.Error("reloaded before the interval passed")
	}
	clock = clock.Add(2 * time.Hour)
	if got := r.Keyring(); got.Primary() != "k2" || !got.Has("k1") {
		t.Fatalf("after the rotation: primary %s", got.Primary())
	}
	if _, err := r.Keyring().Open("k1", sealed, nil); err != nil {
		t.Errorf("the old key no longer decrypts: %v", err)
	}
	// A broken file keeps the last good keys.
	if err := os.WriteFile(path, []byte("keys: [{id: bad, secret: nope}]"), 0o600); err != nil {
		t.Fatal(err)
	}
	clock = clock.Add(2 * time.Hour)
	if r.Keyring().Primary() != "k2" {
		t.Error("a broken key file replaced the keys")
	}
}
