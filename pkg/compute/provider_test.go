package compute

import (
	"errors"
	"fmt"
	"io/fs"
	"testing"
)

func TestProviderErrors(t *testing.T) {
	for name, c := range map[string]struct {
		err        error
		kind, not  error
		message    string
		wrapsNotFS bool
	}{
		"permanent": {Permanentf("cluster %q is not registered", "mars"), ErrPermanent, ErrInProgress,
			`cluster "mars" is not registered`, false},
		"in progress": {InProgressf("namespace %s is being deleted", "tenant-shop"), ErrInProgress, ErrPermanent,
			"namespace tenant-shop is being deleted", false},
		"permanent wrapping a cause": {Permanentf("the API refused the VM: %w", fs.ErrNotExist), ErrPermanent, ErrInProgress,
			"the API refused the VM: file does not exist", true},
		"wrapped again by a caller": {fmt.Errorf("provisioning: %w", InProgressf("waiting for ticket %s", "tkt-1")), ErrInProgress, ErrPermanent,
			"provisioning: waiting for ticket tkt-1", false},
	} {
		t.Run(name, func(t *testing.T) {
			if !errors.Is(c.err, c.kind) {
				t.Errorf("errors.Is(%v, %v) = false", c.err, c.kind)
			}
			if errors.Is(c.err, c.not) {
				t.Errorf("errors.Is(%v, %v) = true", c.err, c.not)
			}
			// The message is the provider's sentence: the kind is not appended to it.
			if got := c.err.Error(); got != c.message {
				t.Errorf("message %q, want %q", got, c.message)
			}
			if got := errors.Is(c.err, fs.ErrNotExist); got != c.wrapsNotFS {
				t.Errorf("errors.Is(fs.ErrNotExist) = %v, want %v", got, c.wrapsNotFS)
			}
		})
	}
}
