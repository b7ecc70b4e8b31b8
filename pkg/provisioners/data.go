package provisioners

// Data is what a provisioner's templates see, field for field as score-k8s gives it, so that a
// template written for score-k8s reads the same names here.
type Data struct {
	// Guid is the resource's stable unique id: it never changes for the resource's life.
	Guid string
	// Uid is the resource's Score uid, type.class#id.
	Uid string
	// Type is the resource type.
	Type string
	// Class is the resource class; a resource that names none has class "default".
	Class string
	// Id is the resource id: its shared id, else workload.resource.
	Id string
	// Params are the resource's params, placeholders already replaced; nil when it has none.
	Params map[string]interface{}
	// Metadata is the resource's metadata from the Score file; nil when it has none.
	Metadata map[string]interface{}
	// Init is the init template's result. Render sets it; a caller leaves it empty.
	Init map[string]interface{}
	// State is the resource's state: the persisted one while init and state render, the new one
	// afterwards.
	State map[string]interface{}
	// Shared is the state every resource of the project (namespace) shares: as persisted while
	// init, state and shared render, with the shared template's changes merged afterwards.
	Shared map[string]interface{}
	// SourceWorkload is the name of the workload the resource belongs to.
	SourceWorkload string
	// WorkloadMetadata is the source workload's Score metadata.
	WorkloadMetadata map[string]interface{}
	// WorkloadServices are the project's workloads by name, with their services.
	WorkloadServices map[string]NetworkService
	// Namespace is the namespace the resource is provisioned in.
	Namespace string
}

// NetworkService is one workload's service as templates see it.
type NetworkService struct {
	// ServiceName is the name of the workload's Service, its hostname in the namespace.
	ServiceName string
	// Ports are the service's ports, keyed by port name and also by port number (as a decimal
	// string) where no port is named that number, as score-k8s keys them: templates look a
	// port up with index .Ports (print .Params.port), whichever of the two a param gives.
	Ports map[string]ServicePort
}

// ServicePort is one port of a workload's service.
type ServicePort struct {
	// Name is the port's name in the workload's service.ports.
	Name string
	// Port is the port the Service publishes.
	Port int
	// TargetPort is the container port; Port when the workload gives none.
	TargetPort int
	// Protocol is TCP or UDP; TCP when the workload gives none.
	Protocol string
}
