// Package registryauth is the credential that writes to a registry plinth-controller serves:
// one random token per registry, kept in a file only plinth-controller's user can read, and the
// keychain through which this process's registry clients present it.
//
// The registries answer reads (GET, HEAD) to anyone, so that Flux pulls without a secret, and
// refuse every write (a push, a tag moved or deleted) without the credential (pkg/oci/registry).
// The credential is HTTP basic authentication with the user Username and the token as the
// password: every OCI client (go-containerregistry, ORAS and so Helm, flux push artifact
// --creds, docker login) speaks it, where a bearer token would need a token server.
//
// The token never goes into an API object, a log line or an event: a Credential prints as
// redacted, and the only copies are the file (mode 0600) and this process's memory.
package registryauth

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/google/go-containerregistry/pkg/authn"
)

// Username is the user of every registry's write credential.
const Username = "plinth-controller"

// FileName is the name of the token file in a registry's data directory.
const FileName = "push-token"

// tokenBytes is the token's entropy: 256 bits, written as 64 hex digits.
const tokenBytes = 32

// Credential is a registry's write credential. Its String and GoString redact the token, so
// that it cannot reach a log by a %v.
type Credential struct {
	Username string
	Password string
}

// String implements fmt.Stringer without the token.
func (c Credential) String() string { return "registryauth.Credential{" + c.Username + ", redacted}" }

// GoString implements fmt.GoStringer without the token.
func (c Credential) GoString() string { return c.String() }

// Valid says whether c is a credential: the username and a token of the expected form.
func (c Credential) Valid() bool { return c.Username == Username && validToken(c.Password) }

func validToken(token string) bool {
	if len(token) != 2*tokenBytes {
		return false
	}
	_, err := hex.DecodeString(token)
	return err == nil
}

// Generate returns a new random credential.
func Generate() (Credential, error) {
	b := make([]byte, tokenBytes)
	if _, err := rand.Read(b); err != nil {
		return Credential{}, err
	}
	return Credential{Username: Username, Password: hex.EncodeToString(b)}, nil
}

// File is the path of the token file of the registry storing in dataDir.
func File(dataDir string) string { return filepath.Join(dataDir, FileName) }

// Read reads the credential of the registry storing in dataDir. It fails when the file is
// missing, does not hold a token, or can be read by other users than its owner (a token that
// others could read is no longer a secret).
func Read(dataDir string) (Credential, error) {
	path := File(dataDir)
	info, err := os.Lstat(path)
	if err != nil {
		return Credential{}, err
	}
	if !info.Mode().IsRegular() {
		return Credential{}, fmt.Errorf("%s is not a regular file", path)
	}
	if info.Mode().Perm()&0o077 != 0 {
		return Credential{}, fmt.Errorf("%s can be read by other users (mode %s)", path, info.Mode().Perm())
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return Credential{}, err
	}
	c := Credential{Username: Username, Password: string(bytes.TrimSpace(data))}
	if !c.Valid() {
		return Credential{}, fmt.Errorf("%s does not hold a registry token", path)
	}
	return c, nil
}

// LoadOrCreate returns the credential of the registry storing in dataDir, and creates it when
// the file is missing or unusable (not a token, or readable by others: replaced by a new one,
// which ends the old one's validity). The token outlives restarts, so that whoever was handed
// it (a standby plinth-controller on the same volume, a person who pushes charts) keeps it;
// deleting the file and restarting the registry replaces it.
func LoadOrCreate(dataDir string) (Credential, error) {
	c, err := Read(dataDir)
	if err == nil {
		return c, nil
	}
	c, err = Generate()
	if err != nil {
		return Credential{}, err
	}
	if err := write(File(dataDir), []byte(c.Password+"\n")); err != nil {
		return Credential{}, err
	}
	return c, nil
}

// write replaces path with data, mode 0600, through a file renamed over it: a reader never
// sees half a token, and a file or link already at path is replaced, not written through.
func write(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() { _ = os.Remove(tmp) }()
	// CreateTemp makes the file 0600 already; said again so that a umask or a later change
	// of CreateTemp cannot widen it.
	err = f.Chmod(0o600)
	if err == nil {
		_, err = f.Write(data)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing the registry token %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("writing the registry token %s: %w", path, err)
	}
	return nil
}

// Keychain maps registry endpoints (localhost:<port>) to their write credentials; it is an
// authn.Keychain, so a go-containerregistry client presents the credential of the registry it
// talks to, and none to any other.
type Keychain struct {
	mu    sync.RWMutex
	creds map[string]Credential
}

var _ authn.Keychain = &Keychain{}

// Local is the keychain of this process: a registry plinth-controller serves puts its
// credential here while it runs, and pkg/oci/artifact's client reads it.
var Local = &Keychain{}

// Set makes c the credential for endpoint.
func (k *Keychain) Set(endpoint string, c Credential) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.creds == nil {
		k.creds = map[string]Credential{}
	}
	k.creds[endpoint] = c
}

// Delete forgets endpoint's credential if it is c (a server started since on the same
// endpoint keeps its own).
func (k *Keychain) Delete(endpoint string, c Credential) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.creds[endpoint] == c {
		delete(k.creds, endpoint)
	}
}

// Get returns endpoint's credential.
func (k *Keychain) Get(endpoint string) (Credential, bool) {
	k.mu.RLock()
	defer k.mu.RUnlock()
	c, ok := k.creds[endpoint]
	return c, ok
}

// Resolve implements authn.Keychain: basic authentication with the credential of the
// resource's registry, anonymous for a registry it has none for.
func (k *Keychain) Resolve(r authn.Resource) (authn.Authenticator, error) {
	c, ok := k.Get(r.RegistryStr())
	if !ok {
		return authn.Anonymous, nil
	}
	return authn.FromConfig(authn.AuthConfig{Username: c.Username, Password: c.Password}), nil
}
