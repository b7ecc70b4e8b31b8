package resourcebinding

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
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

// stateStore reads and writes provisioner state. It remembers what it last wrote for each
// binding: the Secret cache may not have seen that write yet on the next reconcile, and
// rendering from an older state would draw new passwords for a database that already has one.
type stateStore struct {
	client kubernetes.Interface
	mu     sync.Mutex
	known  map[cache.ObjectName]storedState
}

type storedState struct {
	// uid is the binding's: a binding deleted and made again under its name starts afresh.
	uid   types.UID
	state map[string]interface{}
	// encoded is the state as stored: comparing encodings ignores the difference between a
	// rendered 1 and a decoded 1.0.
	encoded         []byte
	resourceVersion string
}

func newStateStore(client kubernetes.Interface) *stateStore {
	return &stateStore{client: client, known: map[cache.ObjectName]storedState{}}
}

// get returns the binding's state: what this process last wrote, else the Secret as the API
// server has it (a live read, once per binding and process).
func (s *stateStore) get(ctx context.Context, b *v1b1.ResourceBinding) (map[string]interface{}, error) {
	st, ok := s.lookup(b)
	if ok {
		return st.state, nil
	}
	secret, err := s.client.CoreV1().Secrets(b.Namespace).Get(ctx, StateSecretName(b.Name), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return map[string]interface{}{}, nil
	case err != nil:
		return nil, err
	}
	state, err := decodeState(secret.Data[stateKey])
	if err != nil {
		return nil, err
	}
	s.remember(b, state, secret.Data[stateKey], secret.ResourceVersion)
	return state, nil
}

// put stores the binding's new state unless it is what is stored already.
func (s *stateStore) put(ctx context.Context, b *v1b1.ResourceBinding, state map[string]interface{}) error {
	st, ok := s.lookup(b)
	data, err := json.Marshal(state)
	if err != nil {
		return err
	}
	if ok && bytes.Equal(st.encoded, data) {
		return nil
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: StateSecretName(b.Name), Namespace: b.Namespace,
			Labels:          map[string]string{"app.kubernetes.io/managed-by": "plinth", BindingLabel: b.Name},
			OwnerReferences: []metav1.OwnerReference{ownerRef(b)}},
		Type: StateSecretType,
		Data: map[string][]byte{stateKey: data},
	}
	var saved *corev1.Secret
	if ok { // known: read from, or written to, the API
		secret.ResourceVersion = st.resourceVersion
		saved, err = s.client.CoreV1().Secrets(b.Namespace).Update(ctx, secret, metav1.UpdateOptions{FieldManager: "plinth-resolver"})
	} else {
		saved, err = s.client.CoreV1().Secrets(b.Namespace).Create(ctx, secret, metav1.CreateOptions{FieldManager: "plinth-resolver"})
	}
	if err != nil {
		// A conflict or an existing Secret means another writer (a former leader): read it again
		// on the retry rather than overwrite it.
		s.forget(cache.MetaObjectToName(b))
		return err
	}
	s.remember(b, state, data, saved.ResourceVersion)
	return nil
}

func (s *stateStore) lookup(b *v1b1.ResourceBinding) (storedState, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.known[cache.MetaObjectToName(b)]
	return st, ok && st.uid == b.UID
}

func (s *stateStore) remember(b *v1b1.ResourceBinding, state map[string]interface{}, encoded []byte, rv string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.known[cache.MetaObjectToName(b)] = storedState{uid: b.UID, state: state, encoded: encoded, resourceVersion: rv}
}

// forget drops what is remembered of a binding: it is gone, or its Secret changed under us.
func (s *stateStore) forget(key cache.ObjectName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.known, key)
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
		_, err = s.client.CoreV1().Secrets(namespace).Create(ctx, secret, metav1.CreateOptions{FieldManager: "plinth-resolver"})
	} else {
		_, err = s.client.CoreV1().Secrets(namespace).Update(ctx, secret, metav1.UpdateOptions{FieldManager: "plinth-resolver"})
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
