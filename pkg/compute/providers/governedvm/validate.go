package governedvm

import (
	"context"
	"errors"
	"fmt"
	"strings"

	utilvalidation "k8s.io/apimachinery/pkg/util/validation"

	"github.com/plinth-dev/plinth/pkg/apis/compute/v1alpha1"
)

// Validate checks what only this provider can judge: that governance can name the tenant's VM
// (the namespace and the tenant ID are parts of the VM's name {namespace}-{system}-{service}-{NN},
// each at most 15 characters), that the spec asks for nothing a VM running podman cannot honour
// (secrets, networking options, storage, http and tcp health checks, two containers on one host
// port), that the providerConfig is the provider's, and that the containers fit in the VM's
// cloud-init. Every problem is named, in one message.
func (p *Provider) Validate(_ context.Context, tc *v1alpha1.TenantCompute) error {
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }

	if msgs := namePart(tc.Spec.TenantID); len(msgs) > 0 {
		add("spec.tenantID %q names the tenant's SystemService, a part of its VM's name: it %s", tc.Spec.TenantID, strings.Join(msgs, " and "))
	}
	if msgs := namePart(tc.Namespace); len(msgs) > 0 {
		add("namespace %q is a part of the tenant's VM name: it %s", tc.Namespace, strings.Join(msgs, " and "))
	}
	if len(tc.Spec.Secrets) > 0 {
		add("spec.secrets is not supported: a VM cannot read the tenant's secrets, and the provider writes no secret value into its cloud-init")
	}
	n := tc.Spec.Networking
	switch {
	case n.PublicIP:
		add("spec.networking.publicIP is not supported: the VM's address is the one its cluster gives it")
	case len(n.SecurityGroups) > 0:
		add("spec.networking.securityGroups is not supported")
	case len(n.Subnets) > 0:
		add("spec.networking.subnets is not supported")
	case n.DNS != nil:
		add("spec.networking.dns is not supported: the VM's hostname is the one governance gives it")
	}
	if tc.Spec.Resources.Storage != 0 {
		add("spec.resources.storage is not supported: the VM's disk is its container disk image")
	}
	published := map[string]string{}
	for _, c := range tc.Spec.Containers {
		if hc := c.HealthCheck; hc != nil && hc.Type != v1alpha1.HealthCheckExec {
			add("container %s: %s health checks are not supported, only exec (run by podman in the container)", c.Name, hc.Type)
		}
		for _, port := range c.Ports {
			key := fmt.Sprintf("%d/%s", hostPort(port), protocol(port))
			if other, taken := published[key]; taken {
				add("containers %s and %s both publish host port %s of the VM", other, c.Name, key)
			}
			published[key] = c.Name
		}
	}
	if len(problems) == 0 {
		// The config and the cloud-init's size: checked on a spec that is otherwise sound.
		if _, err := want(tc); err != nil {
			add("%v", err)
		}
	}
	if len(problems) == 0 {
		return nil
	}
	return errors.New("The kubevirt provider cannot provision this tenant: " + strings.Join(problems, "; ") + ".")
}

// namePart checks a name that becomes part of a VM's name, as governance does: a DNS label of
// at most 15 characters.
func namePart(name string) []string {
	msgs := utilvalidation.IsDNS1123Label(name)
	if len(name) > maxNamePart {
		msgs = append(msgs, fmt.Sprintf("must be at most %d characters", maxNamePart))
	}
	return msgs
}
