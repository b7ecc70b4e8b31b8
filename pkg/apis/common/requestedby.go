package common

// AnnotationRequestedBy names the user who caused what a platform identity does for an
// object: on a Workload and a TenantCompute, plinth-apiserver records in it the authenticated
// user who created the object or last changed its spec, replacing whatever the client wrote
// (a status write or a write that leaves the spec as it is keeps it). plinth-controller copies
// it to the WorkloadPlan it makes of a Workload, and passes it on to the requests it makes for
// the object, such as a governed VM's approval ticket, so that the person who caused a request
// is its requester and may not approve it.
const AnnotationRequestedBy = "plinth.dev/requested-by"
