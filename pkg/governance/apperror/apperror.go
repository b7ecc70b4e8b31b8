// Package apperror builds the governance API's errors in the seed's error-system shape: a
// stable code and named params, carried by a metav1.Status so that kubectl and clients see an
// ordinary Kubernetes error. details.causes holds the code first (reason = the code, field =
// "code", message = the English sentence), then one cause per param (reason "Param", field
// "params.NAME", message = the value). Clients translate by code and params; the message is
// for logs and humans reading English.
package apperror

import (
	"errors"
	"fmt"
	"net/http"
	"sort"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Code is a stable error code. docs/governance.md lists them all.
type Code string

// The codes, with the HTTP status each is returned with.
const (
	// VMNotFound: the ManagedVM a request names does not exist (404).
	VMNotFound Code = "VM_NOT_FOUND"
	// SystemNotFound: a SystemService names a System that does not exist (422).
	SystemNotFound Code = "SYSTEM_NOT_FOUND"
	// ServiceNotFound: a ManagedVM names a SystemService that does not exist (422).
	ServiceNotFound Code = "SERVICE_NOT_FOUND"
	// ApprovalRequired: the change was accepted as a request and waits for approval. It is
	// sent as a warning with the stored object, not as an error.
	ApprovalRequired Code = "APPROVAL_REQUIRED"
	// DuplicatePendingRequest: the same operation is already pending for this VM (409).
	DuplicatePendingRequest Code = "DUPLICATE_PENDING_REQUEST"
	// PendingRequestExists: another operation is pending for this VM; cancel it first (409).
	PendingRequestExists Code = "PENDING_REQUEST_EXISTS"
	// DeleteRestricted: a System with services or a service with VMs cannot be deleted (409).
	DeleteRestricted Code = "DELETE_RESTRICTED"
	// SelfApprovalForbidden: the requester tried to approve or reject their own ticket (403).
	SelfApprovalForbidden Code = "SELF_APPROVAL_FORBIDDEN"
	// ApproverNotAuthorized: the user lacks the verb approve on approvaltickets/approval (403).
	ApproverNotAuthorized Code = "APPROVER_NOT_AUTHORIZED"
	// ApproverNotEligible: the policy restricts approvers to groups the user is not in (403).
	ApproverNotEligible Code = "APPROVER_NOT_ELIGIBLE"
	// AlreadyDecided: this user already decided on this ticket (409).
	AlreadyDecided Code = "ALREADY_DECIDED"
	// TicketNotPending: the ticket is no longer pending (409).
	TicketNotPending Code = "TICKET_NOT_PENDING"
	// NotRequester: only the requester may cancel a ticket (403).
	NotRequester Code = "NOT_REQUESTER"
	// QuotaExceeded: the namespace has as many VMs as the policy allows (403).
	QuotaExceeded Code = "QUOTA_EXCEEDED"
	// PlatformLabel: a request set or changed a kubevirt-shepherd.io/ label or the platform's
	// finalizer, which only the platform manages (422).
	PlatformLabel Code = "PLATFORM_FIELD_FORBIDDEN"
	// VMDeleting: the VM's deletion was requested; it cannot be changed any more (409).
	VMDeleting Code = "VM_DELETING"
	// ClusterDegraded: the chosen target cluster is not HEALTHY, or KubeVirt is not available
	// on it (409).
	ClusterDegraded Code = "CLUSTER_DEGRADED"
	// ClusterNotFound: the chosen target cluster is not registered (422).
	ClusterNotFound Code = "CLUSTER_NOT_FOUND"
	// ClusterRequired: approving a create must choose a target cluster (422).
	ClusterRequired Code = "CLUSTER_REQUIRED"
	// TicketNotExecuting: a runtime reported on a ticket that is not EXECUTING (409).
	TicketNotExecuting Code = "TICKET_NOT_EXECUTING"
	// AlreadyManaged: an adoption found a ManagedVM for the VM already (409).
	AlreadyManaged Code = "ALREADY_MANAGED"
	// ClusterMissingFeatures: the chosen cluster lacks KubeVirt features the VM requires (409).
	ClusterMissingFeatures Code = "CLUSTER_MISSING_FEATURES"
)

// status is each code's HTTP status and Kubernetes reason.
var status = map[Code]struct {
	code   int32
	reason metav1.StatusReason
}{
	VMNotFound:              {http.StatusNotFound, metav1.StatusReasonNotFound},
	SystemNotFound:          {http.StatusUnprocessableEntity, metav1.StatusReasonInvalid},
	ServiceNotFound:         {http.StatusUnprocessableEntity, metav1.StatusReasonInvalid},
	DuplicatePendingRequest: {http.StatusConflict, metav1.StatusReasonConflict},
	PendingRequestExists:    {http.StatusConflict, metav1.StatusReasonConflict},
	DeleteRestricted:        {http.StatusConflict, metav1.StatusReasonConflict},
	SelfApprovalForbidden:   {http.StatusForbidden, metav1.StatusReasonForbidden},
	ApproverNotAuthorized:   {http.StatusForbidden, metav1.StatusReasonForbidden},
	ApproverNotEligible:     {http.StatusForbidden, metav1.StatusReasonForbidden},
	AlreadyDecided:          {http.StatusConflict, metav1.StatusReasonConflict},
	TicketNotPending:        {http.StatusConflict, metav1.StatusReasonConflict},
	NotRequester:            {http.StatusForbidden, metav1.StatusReasonForbidden},
	QuotaExceeded:           {http.StatusForbidden, metav1.StatusReasonForbidden},
	PlatformLabel:           {http.StatusUnprocessableEntity, metav1.StatusReasonInvalid},
	VMDeleting:              {http.StatusConflict, metav1.StatusReasonConflict},
	ClusterDegraded:         {http.StatusConflict, metav1.StatusReasonConflict},
	ClusterNotFound:         {http.StatusUnprocessableEntity, metav1.StatusReasonInvalid},
	ClusterRequired:         {http.StatusUnprocessableEntity, metav1.StatusReasonInvalid},
	ClusterMissingFeatures:  {http.StatusConflict, metav1.StatusReasonConflict},
	TicketNotExecuting:      {http.StatusConflict, metav1.StatusReasonConflict},
	AlreadyManaged:          {http.StatusConflict, metav1.StatusReasonConflict},
	ApprovalRequired:        {http.StatusForbidden, metav1.StatusReasonForbidden},
}

// Params are an error's named values, for example {"vm": "web-1", "operation": "modify"}.
type Params map[string]string

// New returns the error for code about the object kind/name of resource, with params and an
// English message.
func New(code Code, resource schema.GroupResource, name string, params Params, format string, args ...any) *apierrors.StatusError {
	s, ok := status[code]
	if !ok {
		// Every code has a status; a missing one is a programming error, reported as such.
		s.code, s.reason = http.StatusInternalServerError, metav1.StatusReasonInternalError
	}
	message := fmt.Sprintf(format, args...)
	causes := []metav1.StatusCause{{Type: metav1.CauseType(code), Field: "code", Message: message}}
	keys := make([]string, 0, len(params))
	for k := range params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		causes = append(causes, metav1.StatusCause{Type: "Param", Field: "params." + k, Message: params[k]})
	}
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    s.code,
		Reason:  s.reason,
		Message: message,
		Details: &metav1.StatusDetails{Group: resource.Group, Kind: resource.Resource, Name: name, Causes: causes},
	}}
}

// CodeOf returns the code an error carries, or "" when it has none.
func CodeOf(err error) Code {
	var statusErr apierrors.APIStatus
	if !asAPIStatus(err, &statusErr) {
		return ""
	}
	d := statusErr.Status().Details
	if d == nil {
		return ""
	}
	for _, c := range d.Causes {
		if c.Field == "code" {
			return Code(c.Type)
		}
	}
	return ""
}

// ParamsOf returns the params an error carries.
func ParamsOf(err error) Params {
	var statusErr apierrors.APIStatus
	if !asAPIStatus(err, &statusErr) || statusErr.Status().Details == nil {
		return nil
	}
	out := Params{}
	for _, c := range statusErr.Status().Details.Causes {
		if c.Type == "Param" && len(c.Field) > len("params.") {
			out[c.Field[len("params."):]] = c.Message
		}
	}
	return out
}

func asAPIStatus(err error, target *apierrors.APIStatus) bool {
	return errors.As(err, target)
}
