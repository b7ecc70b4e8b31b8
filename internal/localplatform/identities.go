package localplatform

// LocalCluster is the name under which the local kube-apiserver is registered as a target
// Cluster, and TargetUser the identity of its kubeconfig.
const (
	LocalCluster = "local"
	TargetUser   = "plinth:target:local"
)

// Demo identities, each with a kubeconfig in the platform directory.
var Identities = []Identity{
	{User: "admin", Groups: []string{"system:masters"}},
	{User: "alice", Namespace: "team-a"},
	{User: "bob", Namespace: "team-b"},
	// A tenant whom RBAC restrains nowhere in its namespace: what plinth-apiserver still
	// refuses eve there is its own authorizer's doing (docs/security.md).
	{User: "eve", Namespace: "team-a", Wildcard: true},
	{User: "carol", Groups: []string{ApproverGroup}},
	{User: "dana", Groups: []string{"platform:admins"}},
	// The controller's service account, authenticated by certificate so the local platform
	// needs no token machinery; RBAC matches it like the real service account.
	{User: ControllerUser, Groups: []string{"system:serviceaccounts", "system:serviceaccounts:plinth-system"}, Namespace: "plinth-system"},
	// Flux's controllers (flux.go). Flux applies whatever an artifact holds, so its install binds
	// it to cluster-admin; here it is in system:masters instead, which is the same power on the
	// kube-apiserver and keeps kubectl auth can-i truthful for it on plinth-apiserver too, whose
	// internal-API authorizer refuses cluster-admins outside the platform groups.
	{User: FluxUser, Groups: []string{"system:masters"}},
}

// ApproverGroup is the group of the demo approver, carol: plinth-apiserver's --approver-groups.
const ApproverGroup = "platform:approvers"

// ControllerUser is plinth-controller's service account identity.
const ControllerUser = "system:serviceaccount:plinth-system:plinth-controller"

const apiserverUser = "system:serviceaccount:plinth-system:plinth-apiserver"

// Identity is a user of the local platform.
type Identity struct {
	User   string
	Groups []string
	// Namespace is the identity's kubeconfig's namespace; a tenant's (see Tenant) it edits.
	Namespace string
	// Wildcard binds a tenant, in its namespace, to a Role with every verb on every resource
	// of every group instead of the built-in edit role.
	Wildcard bool
}

// Tenant says whether the identity is a tenant: a user of one namespace, in no group.
func (id Identity) Tenant() bool { return id.Namespace != "" && len(id.Groups) == 0 }

// KubeconfigName is the file name of an identity's kubeconfig.
func KubeconfigName(user string) string {
	if user == ControllerUser {
		return "plinth-controller.kubeconfig"
	}
	return user + ".kubeconfig"
}
