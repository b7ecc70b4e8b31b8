package registry

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// probeSize is how much the storage check writes: more than nothing, so that a full disk
// refuses it, and small enough to cost nothing every few seconds.
const probeSize = 4096

// StorageError says why a registry's data directory cannot take writes, in one sentence that
// names the directory; it unwraps to the system's error.
type StorageError struct {
	// Dir is the data directory.
	Dir string
	// Full is true when the disk (or the quota) holding Dir has no space left.
	Full bool
	// Err is the failed operation's error.
	Err error
}

// Error is the sentence: "the disk holding <dir> is full", or that <dir> cannot be written
// and the system's reason.
func (e *StorageError) Error() string {
	if e.Full {
		return fmt.Sprintf("the disk holding %s is full", e.Dir)
	}
	return fmt.Sprintf("the data directory %s cannot be written: %v", e.Dir, innermost(e.Err))
}

// Unwrap returns the system's error.
func (e *StorageError) Unwrap() error { return e.Err }

// CheckStorage writes a small file into the data directory, syncs it to disk and removes it:
// it fails with a *StorageError when the directory is missing or not writable, or its disk is
// full (the distribution registry itself would only fail the next push).
func (s *Server) CheckStorage() error { return checkDir(s.cfg.DataDir) }

func checkDir(dir string) error {
	f, err := os.CreateTemp(dir, ".plinth-storage-probe-*")
	if err != nil {
		return storageError(dir, err)
	}
	defer func() { _ = os.Remove(f.Name()) }()
	// Sync, not only Write: with delayed allocation a full disk may accept the write into the
	// page cache and refuse it only when it is flushed.
	_, err = f.Write(make([]byte, probeSize))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return storageError(dir, err)
	}
	return nil
}

// makeDir creates the data directory and its parents.
func makeDir(dir string) error {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return storageError(dir, err)
	}
	return nil
}

// storageError classifies a failed write in dir.
func storageError(dir string, err error) error {
	return &StorageError{Dir: dir, Full: errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT), Err: err}
}

// innermost is the system's reason without the path, which the sentence names already.
func innermost(err error) error {
	var pathErr *fs.PathError
	if errors.As(err, &pathErr) {
		return pathErr.Err
	}
	return err
}
