package apperror

import (
	"errors"
	"fmt"
	"net/http"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestNewCarriesCodeParamsAndStatus(t *testing.T) {
	err := New(DuplicatePendingRequest, schema.GroupResource{Group: "governance.plinth.dev", Resource: "managedvms"}, "web-1",
		Params{"vm": "web-1", "ticket": "tkt-1"}, "A %s request is already pending.", "modify")
	if !apierrors.IsConflict(err) || err.Status().Code != http.StatusConflict {
		t.Fatalf("status: %+v", err.Status())
	}
	if err.Error() != "A modify request is already pending." {
		t.Errorf("message %q", err.Error())
	}
	wrapped := fmt.Errorf("outer: %w", err)
	if got := CodeOf(wrapped); got != DuplicatePendingRequest {
		t.Errorf("code through wrapping: %q", got)
	}
	params := ParamsOf(err)
	if params["vm"] != "web-1" || params["ticket"] != "tkt-1" || len(params) != 2 {
		t.Errorf("params: %v", params)
	}
	causes := err.Status().Details.Causes
	if causes[0].Field != "code" || causes[1].Field != "params.ticket" || causes[2].Field != "params.vm" {
		t.Errorf("causes are not code first, then params by name: %+v", causes)
	}
}

func TestEveryCodeHasAStatus(t *testing.T) {
	for _, code := range []Code{VMNotFound, SystemNotFound, ServiceNotFound, ApprovalRequired, DuplicatePendingRequest, PendingRequestExists,
		DeleteRestricted, SelfApprovalForbidden, ApproverNotAuthorized, ApproverNotEligible, AlreadyDecided, TicketNotPending, NotRequester,
		QuotaExceeded, PlatformLabel, VMDeleting, ClusterDegraded} {
		if _, ok := status[code]; !ok {
			t.Errorf("%s has no HTTP status", code)
		}
	}
	if CodeOf(errors.New("plain")) != "" || CodeOf(apierrors.NewNotFound(schema.GroupResource{}, "x")) != "" {
		t.Error("errors without a code report one")
	}
}
