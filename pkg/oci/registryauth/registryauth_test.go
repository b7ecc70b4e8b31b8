package registryauth

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
)

func TestLoadOrCreateKeepsTheToken(t *testing.T) {
	dir := t.TempDir()
	first, err := LoadOrCreate(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !first.Valid() || first.Username != Username {
		t.Fatalf("credential not valid: %s", first)
	}
	info, err := os.Stat(File(dir))
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Errorf("token file mode %s, want 0600", info.Mode().Perm())
	}
	again, err := LoadOrCreate(dir)
	if err != nil || again != first {
		t.Errorf("a second load gave another credential (%v)", err)
	}
	read, err := Read(dir)
	if err != nil || read != first {
		t.Errorf("Read: %v", err)
	}
	other, err := LoadOrCreate(t.TempDir())
	if err != nil || other.Password == first.Password {
		t.Errorf("two registries share a token (%v)", err)
	}
}

// A token others could read, a file that holds no token, or a link where the file should be
// is replaced by a new token in a file of mode 0600 (never written through the link).
func TestLoadOrCreateReplacesAnUnusableFile(t *testing.T) {
	for name, prepare := range map[string]func(t *testing.T, path string){
		"readable by others": func(t *testing.T, path string) {
			if err := os.WriteFile(path, []byte(strings.Repeat("ab", tokenBytes)), 0o644); err != nil {
				t.Fatal(err)
			}
		},
		"not a token": func(t *testing.T, path string) {
			if err := os.WriteFile(path, []byte("hunter2\n"), 0o600); err != nil {
				t.Fatal(err)
			}
		},
		"a symbolic link": func(t *testing.T, path string) {
			target := filepath.Join(t.TempDir(), "elsewhere")
			if err := os.WriteFile(target, []byte(strings.Repeat("cd", tokenBytes)), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, path); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if data, _ := os.ReadFile(target); string(data) != strings.Repeat("cd", tokenBytes) {
					t.Errorf("the link's target was written: %q", data)
				}
			})
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			prepare(t, File(dir))
			if _, err := Read(dir); err == nil {
				t.Fatal("Read accepted the file")
			}
			c, err := LoadOrCreate(dir)
			if err != nil {
				t.Fatal(err)
			}
			info, err := os.Lstat(File(dir))
			if err != nil || !info.Mode().IsRegular() || info.Mode().Perm() != 0o600 {
				t.Fatalf("token file %v, %v", info.Mode(), err)
			}
			if c.Password == strings.Repeat("ab", tokenBytes) || c.Password == strings.Repeat("cd", tokenBytes) {
				t.Error("the old token was kept")
			}
			if read, err := Read(dir); err != nil || read != c {
				t.Errorf("Read after the replacement: %v", err)
			}
		})
	}
}

func TestReadMissing(t *testing.T) {
	if _, err := Read(t.TempDir()); !os.IsNotExist(err) {
		t.Errorf("err %v, want not exist", err)
	}
}

// No formatting verb prints the token.
func TestCredentialIsRedacted(t *testing.T) {
	c, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s"} {
		if out := fmt.Sprintf(verb, c); strings.Contains(out, c.Password) {
			t.Errorf("%s prints the token: %s", verb, out)
		}
	}
	if out := fmt.Sprintf("%v", []Credential{c}); strings.Contains(out, c.Password) {
		t.Errorf("a slice prints the token: %s", out)
	}
}

func TestKeychain(t *testing.T) {
	var k Keychain
	c, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	k.Set("localhost:5000", c)
	resolve := func(endpoint string) *authn.AuthConfig {
		t.Helper()
		reg, err := name.NewRegistry(endpoint)
		if err != nil {
			t.Fatal(err)
		}
		a, err := k.Resolve(reg)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := a.Authorization()
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	if cfg := resolve("localhost:5000"); cfg.Username != Username || cfg.Password != c.Password {
		t.Errorf("localhost:5000 resolves to user %q", cfg.Username)
	}
	if cfg := resolve("localhost:5001"); cfg.Username != "" || cfg.Password != "" {
		t.Errorf("another registry gets a credential: user %q", cfg.Username)
	}
	other, _ := Generate()
	k.Delete("localhost:5000", other)
	if _, ok := k.Get("localhost:5000"); !ok {
		t.Error("deleting another credential removed this one")
	}
	k.Delete("localhost:5000", c)
	if _, ok := k.Get("localhost:5000"); ok {
		t.Error("the credential is still there")
	}
}
