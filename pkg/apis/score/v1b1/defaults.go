package v1b1

import (
	"k8s.io/apimachinery/pkg/runtime"
)

func addDefaultingFuncs(scheme *runtime.Scheme) error {
	return RegisterDefaults(scheme)
}

// SetDefaults_ServiceSpec defaults every port's protocol to TCP, as Score does. Ports are map
// values, which defaulter-gen cannot reach one by one, so the map's owner defaults them.
func SetDefaults_ServiceSpec(obj *ServiceSpec) {
	defaultPortProtocols(obj.Ports)
}

// SetDefaults_ServiceProjection defaults a plan's port protocols like the workload's.
func SetDefaults_ServiceProjection(obj *ServiceProjection) {
	defaultPortProtocols(obj.Ports)
}

func defaultPortProtocols(ports map[string]ServicePort) {
	for name, port := range ports {
		if port.Protocol == "" {
			port.Protocol = "TCP"
			ports[name] = port
		}
	}
}
