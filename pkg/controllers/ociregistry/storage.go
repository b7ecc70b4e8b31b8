package ociregistry

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	gitopsv1alpha1 "github.com/plinth-dev/plinth/pkg/apis/gitops/v1alpha1"
)

// storagePath is the directory an OCIRegistry's data lives in: spec.dataPath when it is
// inside one of the data roots, <volume dir>/<spec.volumeName>, or
// <volume dir>/<namespace>-<name> when neither is set. A path outside the roots is refused: a
// platform admin may not have plinth-controller write anywhere on its host.
func (c *Controller) storagePath(reg *gitopsv1alpha1.OCIRegistry) (string, error) {
	switch {
	case reg.Spec.DataPath != "":
		path := reg.Spec.DataPath
		if !filepath.IsAbs(path) {
			return "", fmt.Errorf("spec.dataPath %s is not an absolute path", path)
		}
		for _, root := range c.dataRoots {
			if inside(root, path) {
				return filepath.Clean(path), nil
			}
		}
		return "", fmt.Errorf("spec.dataPath %s is not inside a directory plinth-controller may store registries in (%s)",
			path, strings.Join(c.dataRoots, ", "))
	case reg.Spec.VolumeName != "":
		return c.volume(reg.Spec.VolumeName)
	default:
		return c.volume(reg.Namespace + "-" + reg.Name)
	}
}

// volume is the directory of a named volume, refused unless the name is one path element.
func (c *Controller) volume(name string) (string, error) {
	if name == "." || name == ".." || strings.ContainsRune(name, filepath.Separator) || strings.ContainsRune(name, 0) {
		return "", fmt.Errorf("the volume name %q is not a single directory name", name)
	}
	return filepath.Join(c.volumeDir, name), nil
}

// inside says whether path is strictly inside root (never root itself: deleting a registry's
// data must not remove every registry's), both lexically and after resolving the symbolic
// links of the parts of path that exist, so that a link inside root cannot lead outside it.
func inside(root, path string) bool {
	root, path = filepath.Clean(root), filepath.Clean(path)
	if !strictlyUnder(root, path) {
		return false
	}
	realRoot, err := filepath.EvalSymlinks(root)
	if errors.Is(err, fs.ErrNotExist) {
		return true // nothing exists there yet, so no link can lead elsewhere
	}
	if err != nil {
		return false
	}
	realPath, err := resolveExisting(path)
	if err != nil {
		return false
	}
	return strictlyUnder(realRoot, realPath)
}

// strictlyUnder compares clean paths lexically.
func strictlyUnder(root, path string) bool {
	rel, err := filepath.Rel(root, path)
	return err == nil && rel != "." && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// resolveExisting resolves the symbolic links of the longest existing ancestor of path and
// appends the rest.
func resolveExisting(path string) (string, error) {
	var rest []string
	for dir := path; ; dir = filepath.Dir(dir) {
		resolved, err := filepath.EvalSymlinks(dir)
		if err == nil {
			return filepath.Join(append([]string{resolved}, rest...)...), nil
		}
		if !errors.Is(err, fs.ErrNotExist) || dir == filepath.Dir(dir) {
			return "", err
		}
		rest = append([]string{filepath.Base(dir)}, rest...)
	}
}

// removeData deletes a registry's data directory (spec.deleteDataOnDelete).
func removeData(dir string) error {
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("removing the registry's data in %s: %w", dir, err)
	}
	return nil
}
