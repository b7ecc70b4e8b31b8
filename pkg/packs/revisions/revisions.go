// Package revisions keeps the last rendered revisions of an InfrastructureClusterPack, so that
// a rollback delivers a kept revision instead of rendering the pack again (the chart version it
// resolved to may be gone, or render differently).
//
// A revision is kept in a Secret in the pack's namespace on the management cluster, one per
// revision, named <pack>.v<N>, as Helm's storage driver keeps releases: rendered objects include
// Secrets, so their store must be a Secret, which RBAC keeps to platform administrators, and
// gzip keeps a revision of hundreds of objects far below a Secret's 1 MiB. The Secrets have
// type infrastructure.ontai.dev/pack-revision and the labels infrastructure.ontai.dev/pack
// (v1alpha1.LabelPack) and infrastructure.ontai.dev/revision; key "revision" holds the gzipped
// JSON of the Revision, and annotations repeat its version, digest and render time so that List
// reads no data.
//
// The Secrets have no owner reference (the pack is an aggregated kind, which the garbage
// collector does not follow): the pack's finalizer calls DeleteAll. Nothing here logs, and no
// error quotes a Secret's data.
package revisions

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/utils/ptr"

	"github.com/plinth-dev/plinth/pkg/apis/infrastructure/v1alpha1"
)

const (
	// SecretType is the type of the Secrets that hold revisions.
	SecretType corev1.SecretType = "infrastructure.ontai.dev/pack-revision"
	// LabelRevision marks a revision's Secret with the revision's number.
	LabelRevision = "infrastructure.ontai.dev/revision"
	// DataKey is the Secret data key that holds the gzipped JSON of the Revision.
	DataKey = "revision"

	annotationVersion    = "infrastructure.ontai.dev/version"
	annotationDigest     = "infrastructure.ontai.dev/digest"
	annotationRenderedAt = "infrastructure.ontai.dev/rendered-at"
)

// maxDecodedSize bounds the JSON a revision may hold, on writing and on reading: a Secret of
// 1 MiB of gzip could otherwise decompress to gigabytes. A variable so that tests can lower it.
var maxDecodedSize = 64 << 20

// ErrNumberTaken is wrapped in Save's error when the revision's number is already kept with
// another render: the caller numbers the revision after the newest that List returns.
var ErrNumberTaken = errors.New("the revision number is taken by another render")

// Revision is one rendered revision of a pack.
type Revision struct {
	// Number counts the pack's revisions up from 1.
	Number int64 `json:"number"`
	// Version is the pack's spec.version it was rendered from.
	Version string `json:"version"`
	// Digest is the render's digest, which tells two renders apart.
	Digest string `json:"digest"`
	// HelmVersion is the Helm SDK version that rendered a chart; empty for other packs.
	HelmVersion string `json:"helmVersion,omitempty"`
	// ChartName, ChartURL and ChartVersion name the chart rendered, its version the one the
	// pack's version constraint resolved to; empty for other packs.
	ChartName    string `json:"chartName,omitempty"`
	ChartURL     string `json:"chartURL,omitempty"`
	ChartVersion string `json:"chartVersion,omitempty"`
	// RenderedAt is when it was rendered; it is kept to the second.
	RenderedAt metav1.Time `json:"renderedAt"`
	// Renders holds the rendered objects per Kubernetes minor version of the targets ("v1.37"):
	// Helm templates may read .Capabilities, so clusters of different versions may get
	// different objects. Each object is kept as compact JSON.
	Renders map[string][]json.RawMessage `json:"renders"`
}

// RevisionInfo is what List tells of a revision without reading its objects.
type RevisionInfo struct {
	// Number is the revision's number.
	Number int64
	// Version is the pack version it was rendered from.
	Version string
	// Digest is its render's digest.
	Digest string
	// RenderedAt is when it was rendered, to the second.
	RenderedAt metav1.Time
}

// Store keeps revisions in Secrets on the management cluster. It remembers the revisions it
// decoded: a revision never changes once saved (its Secret is immutable), and both pack
// controllers read the current one on most reconciles. Prune and DeleteAll forget what they
// delete, so a pack deleted and created again under its name never reads the old revisions;
// the controllers share one Store for that reason.
type Store struct {
	secrets typedcorev1.SecretsGetter

	mu      sync.Mutex
	decoded map[revisionKey]*Revision
}

// revisionKey names one revision of one pack.
type revisionKey struct {
	namespace, pack string
	number          int64
}

// maxDecoded bounds the decoded revisions a Store keeps in memory.
const maxDecoded = 256

// NewStore is a Store that keeps revisions through the client, which needs to get, list,
// create and delete Secrets in the packs' namespaces.
func NewStore(client kubernetes.Interface) *Store {
	return &Store{secrets: client.CoreV1(), decoded: map[revisionKey]*Revision{}}
}

// remembered is a revision decoded before, or nil.
func (s *Store) remembered(key revisionKey) *Revision {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.decoded[key]
}

// remember keeps a decoded revision, making room by forgetting any other: a miss costs a read.
func (s *Store) remember(key revisionKey, rev *Revision) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.decoded) >= maxDecoded {
		for k := range s.decoded {
			delete(s.decoded, k)
			break
		}
	}
	s.decoded[key] = rev
}

// forget drops the remembered revisions of a pack.
func (s *Store) forget(namespace, pack string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range s.decoded {
		if k.namespace == namespace && k.pack == pack {
			delete(s.decoded, k)
		}
	}
}

// Get reads revision number of the pack. When it is not kept, the error answers true to
// k8s.io/apimachinery/pkg/api/errors.IsNotFound.
func (s *Store) Get(ctx context.Context, namespace, pack string, number int64) (*Revision, error) {
	if err := checkNames(namespace, pack); err != nil {
		return nil, err
	}
	if number < 1 {
		return nil, fmt.Errorf("revision numbers start at 1, not %d", number)
	}
	key := revisionKey{namespace, pack, number}
	if rev := s.remembered(key); rev != nil {
		return rev, nil
	}
	secret, err := s.secrets.Secrets(namespace).Get(ctx, secretName(pack, number), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, &notKeptError{namespace: namespace, pack: pack, number: number, err: err}
	}
	if err != nil {
		return nil, fmt.Errorf("reading revision %d of pack %s/%s: %w", number, namespace, pack, err)
	}
	if n, ok := revisionNumber(secret, pack); !ok || n != number {
		return nil, fmt.Errorf("the Secret %s/%s is not revision %d of pack %s", namespace, secret.Name, number, pack)
	}
	rev, err := decode(secret.Data[DataKey])
	if err == nil && rev.Number != number {
		err = fmt.Errorf("it records revision %d", rev.Number)
	}
	if err != nil {
		return nil, fmt.Errorf("revision %d of pack %s/%s is corrupt: %w", number, namespace, pack, err)
	}
	s.remember(key, rev)
	return rev, nil
}

// List tells the pack's kept revisions, newest first, from the Secrets' labels and annotations.
func (s *Store) List(ctx context.Context, namespace, pack string) ([]RevisionInfo, error) {
	secrets, err := s.list(ctx, namespace, pack)
	if err != nil {
		return nil, err
	}
	infos := make([]RevisionInfo, 0, len(secrets))
	for _, k := range secrets {
		info := RevisionInfo{Number: k.number, Version: k.secret.Annotations[annotationVersion], Digest: k.secret.Annotations[annotationDigest]}
		renderedAt, err := time.Parse(time.RFC3339, k.secret.Annotations[annotationRenderedAt])
		if err != nil || info.Version == "" || info.Digest == "" {
			return nil, fmt.Errorf("revision %d of pack %s/%s is corrupt: the annotations %s, %s and %s of its Secret are not all set and valid",
				k.number, namespace, pack, annotationVersion, annotationDigest, annotationRenderedAt)
		}
		info.RenderedAt = metav1.NewTime(renderedAt)
		infos = append(infos, info)
	}
	return infos, nil
}

// Save keeps the revision under its number. Saving a revision that is already kept with the
// same version and digest succeeds, so that a retry after a lost answer does no harm; a kept
// revision of that number with another version or digest is an error wrapping ErrNumberTaken.
// Kept revisions are never changed: their Secrets are immutable.
func (s *Store) Save(ctx context.Context, namespace, pack string, rev *Revision) error {
	if err := checkNames(namespace, pack); err != nil {
		return err
	}
	switch {
	case rev == nil:
		return errors.New("there is no revision to save")
	case rev.Number < 1:
		return fmt.Errorf("revision numbers start at 1, not %d", rev.Number)
	case rev.Version == "" || rev.Digest == "":
		return fmt.Errorf("revision %d of pack %s/%s needs a version and a digest", rev.Number, namespace, pack)
	}
	data, err := encode(rev)
	if err != nil {
		return fmt.Errorf("revision %d of pack %s/%s cannot be kept: %w", rev.Number, namespace, pack, err)
	}
	name := secretName(pack, rev.Number)
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name:      name,
			Namespace: namespace,
			Labels:    map[string]string{v1alpha1.LabelPack: pack, LabelRevision: strconv.FormatInt(rev.Number, 10)},
			Annotations: map[string]string{
				annotationVersion:    rev.Version,
				annotationDigest:     rev.Digest,
				annotationRenderedAt: rev.RenderedAt.UTC().Format(time.RFC3339),
			},
		},
		Type: SecretType,
		// A revision is what was rendered then; nothing may rewrite it, Plinth included.
		Immutable: ptr.To(true),
		Data:      map[string][]byte{DataKey: data},
	}
	_, err = s.secrets.Secrets(namespace).Create(ctx, secret, metav1.CreateOptions{})
	if err == nil {
		return nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("keeping revision %d of pack %s/%s: %w", rev.Number, namespace, pack, err)
	}
	kept, err := s.secrets.Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading revision %d of pack %s/%s: %w", rev.Number, namespace, pack, err)
	}
	if n, ok := revisionNumber(kept, pack); !ok || n != rev.Number {
		return fmt.Errorf("revision %d of pack %s/%s cannot be kept: a Secret %s that is not a pack revision exists", rev.Number, namespace, pack, name)
	}
	if kept.Annotations[annotationDigest] == rev.Digest && kept.Annotations[annotationVersion] == rev.Version {
		return nil
	}
	return fmt.Errorf("revision %d of pack %s/%s is kept with version %s and digest %s: %w",
		rev.Number, namespace, pack, kept.Annotations[annotationVersion], kept.Annotations[annotationDigest], ErrNumberTaken)
}

// Prune deletes the pack's revisions except the newest keep and those whose numbers are in
// protect (revisions some cluster still runs). It goes on past a failed deletion and returns
// every failure.
func (s *Store) Prune(ctx context.Context, namespace, pack string, keep int, protect ...int64) error {
	if keep < 0 {
		return fmt.Errorf("the number of revisions to keep must not be negative, not %d", keep)
	}
	secrets, err := s.list(ctx, namespace, pack)
	if err != nil {
		return err
	}
	s.forget(namespace, pack)
	var errs []error
	for i, k := range secrets {
		if i < keep || slices.Contains(protect, k.number) {
			continue
		}
		errs = append(errs, s.delete(ctx, k.secret))
	}
	return errors.Join(errs...)
}

// DeleteAll deletes every revision of the pack.
func (s *Store) DeleteAll(ctx context.Context, namespace, pack string) error {
	secrets, err := s.list(ctx, namespace, pack)
	if err != nil {
		return err
	}
	s.forget(namespace, pack)
	var errs []error
	for _, k := range secrets {
		errs = append(errs, s.delete(ctx, k.secret))
	}
	return errors.Join(errs...)
}

// kept is a revision's Secret and the revision's number.
type kept struct {
	secret *corev1.Secret
	number int64
}

// list returns the Secrets of the pack's revisions, newest first. Secrets that carry the pack's
// label but are not revision Secrets of this pack by type, name and number label are none of
// the store's business and left out, so that Prune and DeleteAll never touch them.
func (s *Store) list(ctx context.Context, namespace, pack string) ([]kept, error) {
	if err := checkNames(namespace, pack); err != nil {
		return nil, err
	}
	list, err := s.secrets.Secrets(namespace).List(ctx, metav1.ListOptions{LabelSelector: labels.Set{v1alpha1.LabelPack: pack}.String()})
	if err != nil {
		return nil, fmt.Errorf("listing the revisions of pack %s/%s: %w", namespace, pack, err)
	}
	var ks []kept
	for i := range list.Items {
		if n, ok := revisionNumber(&list.Items[i], pack); ok {
			ks = append(ks, kept{secret: &list.Items[i], number: n})
		}
	}
	slices.SortFunc(ks, func(a, b kept) int { return cmp.Compare(b.number, a.number) })
	return ks, nil
}

// delete deletes a revision's Secret; one already gone is no error.
func (s *Store) delete(ctx context.Context, secret *corev1.Secret) error {
	err := s.secrets.Secrets(secret.Namespace).Delete(ctx, secret.Name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting the Secret %s/%s of a pack revision: %w", secret.Namespace, secret.Name, err)
	}
	return nil
}

// revisionNumber is the number of the pack's revision the Secret holds, and false when the
// Secret is not one of its revisions.
func revisionNumber(secret *corev1.Secret, pack string) (int64, bool) {
	if secret.Type != SecretType || secret.Labels[v1alpha1.LabelPack] != pack {
		return 0, false
	}
	n, err := strconv.ParseInt(secret.Labels[LabelRevision], 10, 64)
	if err != nil || n < 1 || secret.Name != secretName(pack, n) {
		return 0, false
	}
	return n, true
}

// secretName is <pack>.v<number>.
func secretName(pack string, number int64) string {
	return pack + ".v" + strconv.FormatInt(number, 10)
}

// checkNames checks that namespace and pack are names a pack can have: the pack's name is a
// DNS label, which keeps it a valid label value and <pack>.v<N> a valid Secret name.
func checkNames(namespace, pack string) error {
	if errs := validation.IsDNS1123Label(namespace); len(errs) > 0 {
		return fmt.Errorf("the namespace %q is not a DNS label", namespace)
	}
	if errs := validation.IsDNS1123Label(pack); len(errs) > 0 {
		return fmt.Errorf("the pack name %q is not a DNS label", pack)
	}
	return nil
}

// encode is the gzipped JSON of the revision, refused when it is larger than Get would read or
// than a Secret may hold: a clear error here instead of the API server's later.
func encode(rev *Revision) ([]byte, error) {
	raw, err := json.Marshal(rev)
	if err != nil {
		return nil, fmt.Errorf("encoding it: %w", err)
	}
	if len(raw) > maxDecodedSize {
		return nil, fmt.Errorf("its objects take %d bytes of JSON, more than the %d a revision may hold", len(raw), maxDecodedSize)
	}
	var buf bytes.Buffer
	// Default compression: rendered objects repeat their keys and labels and shrink about
	// tenfold, and the cost is small beside the render itself.
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(raw); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	if buf.Len() > corev1.MaxSecretSize {
		return nil, fmt.Errorf("its objects compress to %d bytes, more than the %d a Secret may hold", buf.Len(), corev1.MaxSecretSize)
	}
	return buf.Bytes(), nil
}

// decode reads what encode wrote. Its errors name what is wrong, never the data: a revision
// may hold Secrets.
func decode(data []byte) (*Revision, error) {
	if len(data) == 0 {
		return nil, fmt.Errorf("its Secret has no %q data", DataKey)
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, errors.New("its data is not gzip-compressed")
	}
	raw, err := io.ReadAll(io.LimitReader(zr, int64(maxDecodedSize)+1))
	if err != nil {
		return nil, errors.New("its data is not a complete gzip stream")
	}
	if len(raw) > maxDecodedSize {
		return nil, fmt.Errorf("its data decompresses to more than %d bytes", maxDecodedSize)
	}
	var rev Revision
	// The decoder's own errors are left out: a syntax error quotes the character it met.
	if err := json.Unmarshal(raw, &rev); err != nil {
		return nil, errors.New("its data is not the JSON of a revision")
	}
	return &rev, nil
}

// notKeptError is Get's error for a revision that is not kept. It wraps the API server's
// NotFound, so that apierrors.IsNotFound is true of it, and reads as a sentence about the
// revision rather than about a Secret.
type notKeptError struct {
	namespace, pack string
	number          int64
	err             error
}

func (e *notKeptError) Error() string {
	return fmt.Sprintf("revision %d of pack %s/%s is not kept", e.number, e.namespace, e.pack)
}

func (e *notKeptError) Unwrap() error { return e.err }
