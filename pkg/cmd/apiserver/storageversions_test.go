package apiserver

import (
	"testing"

	"github.com/plinth-dev/plinth/pkg/apiserver"
)

// Every API group plinth-apiserver serves needs its storage version: without one, the storage
// codec cannot encode the group's objects and every write of them fails.
func TestEveryGroupHasAStorageVersion(t *testing.T) {
	stored := map[string]string{}
	for _, gv := range storageVersions {
		stored[gv.Group] = gv.Version
	}
	for _, gv := range apiserver.Scheme.PrioritizedVersionsAllGroups() {
		if gv.Group == "" {
			continue // meta/v1 options and status: never stored
		}
		if _, ok := stored[gv.Group]; !ok {
			t.Errorf("group %s has no storage version", gv.Group)
		}
	}
}
