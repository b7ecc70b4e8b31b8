package kubevirt

import (
	"errors"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/plinth-dev/plinth/pkg/errkind"
)

// The cluster refusing a VM is not retried; a cluster that is busy or away is.
func TestRefusalsAreStalled(t *testing.T) {
	vms := schema.GroupResource{Group: "kubevirt.io", Resource: "virtualmachines"}
	for err, stalled := range map[error]bool{
		apierrors.NewInvalid(schema.GroupKind{Group: "kubevirt.io", Kind: "VirtualMachine"}, "vm", field.ErrorList{field.Required(field.NewPath("spec"), "")}): true,
		apierrors.NewForbidden(vms, "vm", errors.New("no")):      true,
		apierrors.NewBadRequest("nope"):                          true,
		apierrors.NewServiceUnavailable("later"):                 false,
		apierrors.NewConflict(vms, "vm", errors.New("changed")):  false,
		errors.New("dial tcp 10.0.0.1:6443: connection refused"): false,
	} {
		got := refused(err)
		if errkind.IsStalled(got) != stalled {
			t.Errorf("refused(%v): stalled = %v, want %v", err, errkind.IsStalled(got), stalled)
		}
		if got.Error() != err.Error() || !errors.Is(got, err) {
			t.Errorf("refused(%v) = %v, want the same error", err, got)
		}
	}
	if refused(nil) != nil {
		t.Error("refused(nil) is not nil")
	}
}
