package keyring

import (
	"os"
	"sync"
	"time"

	"k8s.io/klog/v2"
)

// ReloadInterval is how often the Plinth processes look at their key file for changes.
const ReloadInterval = 2 * time.Second

// Source gives the current keyring. A *Keyring is a Source of itself; a *Reloading follows
// its key file.
type Source interface {
	Keyring() *Keyring
}

// Keyring returns k: a loaded keyring never changes.
func (k *Keyring) Keyring() *Keyring { return k }

// Reloading follows a key file: when the file's modification time or size changes, the next
// call loads it again, so a rotation (a new first key) takes effect without a restart. It looks
// at the file at most once per interval. A file that no longer loads keeps the last good
// keyring in use, and says so in the log.
type Reloading struct {
	path     string
	interval time.Duration
	now      func() time.Time

	mu      sync.Mutex
	current *Keyring
	modTime time.Time
	size    int64
	checked time.Time
}

// NewReloading loads path and follows it.
func NewReloading(path string, interval time.Duration) (*Reloading, error) {
	r := &Reloading{path: path, interval: interval, now: time.Now}
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	k, err := Load(path)
	if err != nil {
		return nil, err
	}
	r.current, r.modTime, r.size, r.checked = k, info.ModTime(), info.Size(), r.now()
	return r, nil
}

// Keyring returns the keyring of the key file as it is now.
func (r *Reloading) Keyring() *Keyring {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.now().Sub(r.checked) < r.interval {
		return r.current
	}
	r.checked = r.now()
	info, err := os.Stat(r.path)
	if err != nil || (info.ModTime().Equal(r.modTime) && info.Size() == r.size) {
		return r.current
	}
	k, err := Load(r.path)
	if err != nil {
		klog.ErrorS(err, "The key file changed but does not load; the previous keys stay in use", "path", r.path)
		return r.current
	}
	if k.Primary() != r.current.Primary() {
		klog.InfoS("Key file reloaded", "path", r.path, "encryptingKey", k.Primary())
	}
	r.current, r.modTime, r.size = k, info.ModTime(), info.Size()
	return r.current
}
