package v1b1

import (
	"k8s.io/apimachinery/pkg/runtime"
)

func addDefaultingFuncs(scheme *runtime.Scheme) error {
	return RegisterDefaults(scheme)
}

// SetDefaults_ServicePort defaults the protocol to TCP, as Score does.
func SetDefaults_ServicePort(obj *ServicePort) {
	if obj.Protocol == "" {
		obj.Protocol = "TCP"
	}
}
