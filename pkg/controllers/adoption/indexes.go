package adoption

import (
	"fmt"

	"k8s.io/client-go/tools/cache"

	gov "github.com/plinth-dev/plinth/pkg/apis/governance/v1alpha1"
)

// VMsByIdentity indexes ManagedVMs by what identifies their VirtualMachine on a cluster:
// namespace/instance name, and namespace/service/instance number. Every VM found on every scan
// is looked up by both, so the adopter does not list the namespace each time.
const VMsByIdentity = "adoption.plinth.dev/identity"

// VMIndexers are the indexes NewController adds to the ManagedVM informer.
var VMIndexers = cache.Indexers{VMsByIdentity: func(obj interface{}) ([]string, error) {
	vm, ok := obj.(*gov.ManagedVM)
	if !ok || vm.Status.Instance == 0 {
		return nil, nil
	}
	return []string{
		byInstanceName(vm.Namespace, vm.Status.InstanceName),
		byServiceInstance(vm.Namespace, vm.Spec.SystemServiceRef.Name, int(vm.Status.Instance)),
	}, nil
}}

func byInstanceName(namespace, instanceName string) string {
	return namespace + "/name/" + instanceName
}

func byServiceInstance(namespace, service string, instance int) string {
	return fmt.Sprintf("%s/service/%s/%d", namespace, service, instance)
}
