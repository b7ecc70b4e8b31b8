// Package keyring encrypts small secrets (target clusters' kubeconfigs) with AES-256-GCM under
// named keys read from a key file. The first key of the file encrypts; every key decrypts, so
// rotating is: add a new key first, restart or reload, re-encrypt the stored objects, then drop
// the old key. Each ciphertext is bound to additional data (the object it belongs to), so a
// ciphertext copied onto another object does not decrypt.
package keyring

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"regexp"

	"sigs.k8s.io/yaml"
)

// KeySize is the size of an AES-256 key in bytes.
const KeySize = 32

// File is the key file's format:
//
//	keys:
//	- id: k2            # encrypts, and decrypts what k2 encrypted
//	  secret: <base64 of 32 random bytes>
//	- id: k1            # still decrypts what k1 encrypted
//	  secret: <base64>
type File struct {
	// Keys are the keys, the encrypting one first.
	Keys []FileKey `json:"keys"`
}

// FileKey is one named key.
type FileKey struct {
	// ID names the key; it is stored beside each ciphertext.
	ID string `json:"id"`
	// Secret is the base64-encoded 32-byte key.
	Secret string `json:"secret"`
}

// Keyring holds the keys of one key file. It is immutable and safe for concurrent use.
type Keyring struct {
	primary string
	aeads   map[string]cipher.AEAD
}

var keyID = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9._-]{0,62}$`)

// ReadFile reads a key file without checking its keys.
func ReadFile(path string) (File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return File{}, fmt.Errorf("reading the key file: %w", err)
	}
	var f File
	if err := yaml.UnmarshalStrict(data, &f); err != nil {
		return File{}, fmt.Errorf("key file %s: %w", path, err)
	}
	return f, nil
}

// Load reads a key file.
func Load(path string) (*Keyring, error) {
	f, err := ReadFile(path)
	if err != nil {
		return nil, err
	}
	k, err := New(f)
	if err != nil {
		return nil, fmt.Errorf("key file %s: %w", path, err)
	}
	return k, nil
}

// New builds a keyring from decoded keys, refusing empty, duplicate, malformed or short keys.
func New(f File) (*Keyring, error) {
	if len(f.Keys) == 0 {
		return nil, errors.New("no keys: at least one is needed to encrypt")
	}
	k := &Keyring{primary: f.Keys[0].ID, aeads: map[string]cipher.AEAD{}}
	for i, key := range f.Keys {
		if !keyID.MatchString(key.ID) {
			return nil, fmt.Errorf("keys[%d].id %q: must be 1-63 letters, digits, '.', '_' or '-'", i, key.ID)
		}
		if _, dup := k.aeads[key.ID]; dup {
			return nil, fmt.Errorf("keys[%d].id %q: duplicate", i, key.ID)
		}
		secret, err := base64.StdEncoding.DecodeString(key.Secret)
		if err != nil {
			return nil, fmt.Errorf("keys[%d].secret: not base64", i)
		}
		if len(secret) != KeySize {
			return nil, fmt.Errorf("keys[%d].secret: %d bytes, want %d", i, len(secret), KeySize)
		}
		block, err := aes.NewCipher(secret)
		if err != nil {
			return nil, err
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, err
		}
		k.aeads[key.ID] = aead
	}
	return k, nil
}

// Primary is the ID of the key that encrypts.
func (k *Keyring) Primary() string { return k.primary }

// Has reports whether the keyring can decrypt what key id encrypted.
func (k *Keyring) Has(id string) bool {
	_, ok := k.aeads[id]
	return ok
}

// Seal encrypts plaintext with the primary key, bound to additionalData. The result is the
// random nonce followed by the ciphertext and tag.
func (k *Keyring) Seal(plaintext, additionalData []byte) (id string, sealed []byte, err error) {
	aead := k.aeads[k.primary]
	nonce := make([]byte, aead.NonceSize(), aead.NonceSize()+len(plaintext)+aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return "", nil, err
	}
	return k.primary, aead.Seal(nonce, nonce, plaintext, additionalData), nil
}

// ErrUnknownKey is returned for ciphertexts of a key the keyring does not hold.
var ErrUnknownKey = errors.New("the key that encrypted this value is not in the key file")

// Open decrypts what Seal returned for key id and the same additionalData.
func (k *Keyring) Open(id string, sealed, additionalData []byte) ([]byte, error) {
	aead, ok := k.aeads[id]
	if !ok {
		return nil, fmt.Errorf("key %q: %w", id, ErrUnknownKey)
	}
	if len(sealed) < aead.NonceSize()+aead.Overhead() {
		return nil, errors.New("the encrypted value is truncated")
	}
	nonce, ciphertext := sealed[:aead.NonceSize()], sealed[aead.NonceSize():]
	plain, err := aead.Open(nil, nonce, ciphertext, additionalData)
	if err != nil {
		// GCM says only "message authentication failed"; no detail helps an attacker.
		return nil, errors.New("the encrypted value does not decrypt with its key: it was altered or belongs to another object")
	}
	return plain, nil
}

// GenerateKey returns a new random key with id, for a key file.
func GenerateKey(id string) (FileKey, error) {
	secret := make([]byte, KeySize)
	if _, err := rand.Read(secret); err != nil {
		return FileKey{}, err
	}
	return FileKey{ID: id, Secret: base64.StdEncoding.EncodeToString(secret)}, nil
}

// WriteFile writes f to path, readable by the owner only.
func WriteFile(path string, f File) error {
	data, err := yaml.Marshal(f)
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o600)
}

// EnsureFile writes a key file with one new key, named k1, unless path exists already.
func EnsureFile(path string) error {
	if _, err := os.Stat(path); err == nil {
		return nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	key, err := GenerateKey("k1")
	if err != nil {
		return err
	}
	return WriteFile(path, File{Keys: []FileKey{key}})
}
