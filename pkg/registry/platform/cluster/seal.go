package cluster

import (
	"context"
	"encoding/base64"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/klog/v2"

	"github.com/plinth-dev/plinth/pkg/apis/platform"
	"github.com/plinth-dev/plinth/pkg/credentials"
	"github.com/plinth-dev/plinth/pkg/keyring"
)

// envelopePrefix starts a sealed kubeconfig as stored in spec.kubeconfig:
// plinth-sealed/v1:<key id>:<base64 of nonce, ciphertext and tag>. A kubeconfig never starts
// with it (it is not YAML of a kubeconfig), so plain and sealed values cannot be confused.
const envelopePrefix = "plinth-sealed/v1:"

func envelope(keyID string, sealed []byte) string {
	return envelopePrefix + keyID + ":" + base64.StdEncoding.EncodeToString(sealed)
}

// openEnvelope splits a stored value into key id and ciphertext; ok is false for anything
// that is not an envelope (a plain kubeconfig on its way in).
func openEnvelope(value string) (keyID string, sealed []byte, ok bool) {
	rest, found := strings.CutPrefix(value, envelopePrefix)
	if !found {
		return "", nil, false
	}
	keyID, encoded, found := strings.Cut(rest, ":")
	if !found {
		return "", nil, false
	}
	sealed, err := base64.StdEncoding.DecodeString(encoded)
	if err != nil {
		return "", nil, false
	}
	return keyID, sealed, true
}

// sealingStorage encrypts a Cluster's kubeconfig on its way into storage: every create and
// every update that carries a plain kubeconfig stores the envelope instead, and an envelope
// sealed with a key that is no longer the primary one is sealed again with the primary key on
// any write — that is the re-encryption step of a key rotation. It sits above the watch cache,
// so neither the cache nor etcd ever holds the plain kubeconfig.
type sealingStorage struct {
	storage.Interface
	keys keyring.Source
}

// errNoKeys is what a write of a kubeconfig gets from a server started without a key file.
func errNoKeys() error {
	return apierrors.NewServiceUnavailable("plinth-apiserver was started without --encryption-key-file, so it cannot store cluster kubeconfigs")
}

func (s *sealingStorage) Create(ctx context.Context, key string, obj, out runtime.Object, ttl uint64) error {
	if err := s.seal(obj.(*platform.Cluster)); err != nil {
		return err
	}
	return s.Interface.Create(ctx, key, obj, out, ttl)
}

func (s *sealingStorage) GuaranteedUpdate(ctx context.Context, key string, destination runtime.Object, ignoreNotFound bool,
	preconditions *storage.Preconditions, tryUpdate storage.UpdateFunc, cachedExistingObject runtime.Object) error {
	return s.Interface.GuaranteedUpdate(ctx, key, destination, ignoreNotFound, preconditions,
		func(input runtime.Object, res storage.ResponseMeta) (runtime.Object, *uint64, error) {
			out, ttl, err := tryUpdate(input, res)
			if err != nil {
				return nil, nil, err
			}
			if err := s.seal(out.(*platform.Cluster)); err != nil {
				return nil, nil, err
			}
			return out, ttl, nil
		}, cachedExistingObject)
}

// seal replaces a plain kubeconfig by its envelope and records the key in status. An envelope
// under the primary key is left alone, so an update that changes nothing writes nothing.
func (s *sealingStorage) seal(c *platform.Cluster) error {
	var keys *keyring.Keyring
	if s.keys != nil {
		keys = s.keys.Keyring()
	}
	value := c.Spec.Kubeconfig
	if value == "" {
		c.Status.EncryptionKeyID = ""
		return nil
	}
	aad := credentials.AdditionalData(c.Name, c.UID)
	if keyID, sealed, ok := openEnvelope(value); ok {
		c.Status.EncryptionKeyID = keyID
		if keys == nil || keyID == keys.Primary() || !keys.Has(keyID) {
			return nil
		}
		plain, err := keys.Open(keyID, sealed, aad)
		if err != nil {
			// Keep the stored value: the write goes on, and the controller reports the
			// credentials as invalid.
			klog.ErrorS(err, "Re-encrypting a cluster's kubeconfig failed; it stays under its old key", "cluster", c.Name, "key", keyID)
			return nil
		}
		value = string(plain)
	}
	if keys == nil {
		return errNoKeys()
	}
	keyID, sealed, err := keys.Seal([]byte(value), aad)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	c.Spec.Kubeconfig = envelope(keyID, sealed)
	c.Status.EncryptionKeyID = keyID
	return nil
}
