package localplatform

import (
	"path/filepath"
	"testing"
)

// plinth-controller refuses a relative --registry-volume-dir; the platform directory is often
// given relative (make run's .plinth/local).
func TestRegistryVolumeDirIsAbsolute(t *testing.T) {
	p := &Platform{cfg: Config{Dir: filepath.Join(".plinth", "local")}}
	dir := p.RegistryVolumeDir()
	if !filepath.IsAbs(dir) || filepath.Base(dir) != "registries" || filepath.Base(filepath.Dir(dir)) != "local" {
		t.Errorf("registry volume dir %q", dir)
	}
}
