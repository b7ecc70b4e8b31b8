package resourcebinding

import (
	"bytes"
	"context"
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
	"github.com/plinth-dev/plinth/pkg/controllers/loop"
)

// A template provisioner's state and the namespace's shared state persist between reconciles.
// They are where templates keep generated passwords (score-k8s keeps them in its state file), so
// they live in Secrets, never in a status anyone can read.
const (
	// StateSecretType marks the Secrets that hold provisioner state.
	StateSecretType corev1.SecretType = "score.dev/provisioner-state"
	// SharedStateSecret is the Secret of a namespace's shared state: score-k8s shares it across
	// a project, and a namespace is Plinth's project.
	SharedStateSecret = "score-shared-state"
	stateKey          = "state"
)

// StateSecretName names a binding's state Secret. The dot keeps it apart from everything
// provisioners name after the binding (names derived from bindings have no dots).
func StateSecretName(binding string) string { return binding + ".state" }

// stateStore reads and writes provisioner state. A binding's state Secret is read from the
// Secret cache, through loop.Written: the cache may not show the store's last update of it on
// the next reconcile, and rendering from an older state would draw new passwords for a database
// that already has one. A Secret the cache does not have is read live: the store may have just
// created it (Written guards updates only, as it needs the cached version an update replaced),
// and a controller without a Secret cache (nil) reads every Secret live.
type stateStore struct {
	client  kubernetes.Interface
	secrets corelisters.SecretLister
	written loop.Written[*corev1.Secret]
}

func newStateStore(client kubernetes.Interface, secrets corelisters.SecretLister) *stateStore {
	return &stateStore{client: client, secrets: secrets}
}

// get returns the binding's state, empty when it has none, and the state Secret it was read
// from (nil when there is none), which put takes back.
func (s *stateStore) get(ctx context.Context, b *v1b1.ResourceBinding) (map[string]interface{}, *corev1.Secret, error) {
	secret, err := s.stateSecret(ctx, b)
	if err != nil {
		return nil, nil, err
	}
	if secret == nil {
		return map[string]interface{}{}, nil, nil
	}
	state, err := decodeState(secret.Data[stateKey])
	return state, secret, err
}

// stateSecret is the binding's state Secret as last written, nil when there is none.
func (s *stateStore) stateSecret(ctx context.Context, b *v1b1.ResourceBinding) (*corev1.Secret, error) {
	name := StateSecretName(b.Name)
	if s.secrets != nil {
		cached, err := s.secrets.Secrets(b.Namespace).Get(name)
		if err == nil {
			return s.written.Fresher(cache.NewObjectName(b.Namespace, name), cached), nil
		}
		if !apierrors.IsNotFound(err) {
			return nil, err
		}
	}
	secret, err := s.client.CoreV1().Secrets(b.Namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return secret, err
}

// put stores the binding's new state, rendered from what get read (read, nil when there was no
// state Secret), unless it is what is stored already. The write carries the version read, so a
// Secret another writer (a former leader) changed or created meanwhile fails it rather than
// being overwritten: the retry renders from that writer's state.
func (s *stateStore) put(ctx context.Context, b *v1b1.ResourceBinding, state map[string]interface{}, read *corev1.Secret) error {
	data, err := json.Marshal(state)
	if err != nil {
		return err
	}
	// Encodings are compared: a rendered 1 and a decoded 1.0 are the same state.
	if read != nil && bytes.Equal(read.Data[stateKey], data) {
		return nil
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: StateSecretName(b.Name), Namespace: b.Namespace,
			Labels:          map[string]string{"app.kubernetes.io/managed-by": "plinth", BindingLabel: b.Name},
			OwnerReferences: []metav1.OwnerReference{ownerRef(b)}},
		Type: StateSecretType,
		Data: map[string][]byte{stateKey: data},
	}
	if read == nil {
		_, err = s.client.CoreV1().Secrets(b.Namespace).Create(ctx, secret, metav1.CreateOptions{FieldManager: fieldManager})
		return err
	}
	secret.UID, secret.ResourceVersion = read.UID, read.ResourceVersion
	updated, err := s.client.CoreV1().Secrets(b.Namespace).Update(ctx, secret, metav1.UpdateOptions{FieldManager: fieldManager})
	if err != nil {
		return err
	}
	s.written.Record(cache.MetaObjectToName(secret), read, updated)
	return nil
}

// forget drops what is remembered of a binding that is gone.
func (s *stateStore) forget(binding cache.ObjectName) {
	s.written.Forget(cache.NewObjectName(binding.Namespace, StateSecretName(binding.Name)))
}

// sharedVersion is the shared state's Secret as read: whether it exists, and the
// resourceVersion an update must carry.
type sharedVersion struct {
	exists          bool
	resourceVersion string
}

// shared returns the namespace's shared state and the version to update it with. It is read live
// each time: every binding of the namespace may write it.
func (s *stateStore) shared(ctx context.Context, namespace string) (map[string]interface{}, sharedVersion, error) {
	secret, err := s.client.CoreV1().Secrets(namespace).Get(ctx, SharedStateSecret, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return map[string]interface{}{}, sharedVersion{}, nil
	case err != nil:
		return nil, sharedVersion{}, err
	}
	state, err := decodeState(secret.Data[stateKey])
	return state, sharedVersion{exists: true, resourceVersion: secret.ResourceVersion}, err
}

// putShared writes the shared state with optimistic concurrency: a conflict fails the
// reconcile, whose retry renders again from the other writer's state.
func (s *stateStore) putShared(ctx context.Context, namespace string, shared map[string]interface{}, version sharedVersion) error {
	data, err := json.Marshal(shared)
	if err != nil {
		return err
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: SharedStateSecret, Namespace: namespace, ResourceVersion: version.resourceVersion,
			Labels: map[string]string{"app.kubernetes.io/managed-by": "plinth"}},
		Type: StateSecretType,
		Data: map[string][]byte{stateKey: data},
	}
	if !version.exists {
		_, err = s.client.CoreV1().Secrets(namespace).Create(ctx, secret, metav1.CreateOptions{FieldManager: fieldManager})
	} else {
		_, err = s.client.CoreV1().Secrets(namespace).Update(ctx, secret, metav1.UpdateOptions{FieldManager: fieldManager})
	}
	return err
}

func decodeState(data []byte) (map[string]interface{}, error) {
	state := map[string]interface{}{}
	if len(data) == 0 {
		return state, nil
	}
	if err := json.Unmarshal(data, &state); err != nil {
		return nil, err
	}
	return state, nil
}
