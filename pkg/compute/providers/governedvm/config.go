package governedvm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/plinth-dev/plinth/pkg/apis/compute/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/compute"
)

// DefaultImage is the container disk a tenant's VM boots unless providerConfig.image names
// another: a cloud image with cloud-init whose package sources offer podman.
const DefaultImage = "quay.io/containerdisks/fedora:latest"

// maxImage is the longest image reference governance accepts in a ManagedVM's spec.image.
const maxImage = 512

// config is the provider's providerConfig. The cluster is not in it on purpose: the approver of
// the VM's creation chooses the cluster.
type config struct {
	// Image is the container disk image the VM boots.
	Image string `json:"image"`
}

// configSchema is the JSON Schema of providerConfig that the ComputeProvider publishes and
// plinth-apiserver checks at admission.
const configSchema = `{
  "type": "object",
  "properties": {
    "image": {
      "type": "string",
      "minLength": 1,
      "maxLength": 512,
      "pattern": "^[^\\s]+$",
      "description": "The container disk image the tenant's VM boots, for example quay.io/containerdisks/fedora:latest: a cloud image with cloud-init whose package sources offer podman. The cluster is chosen by the approver of the VM."
    }
  },
  "additionalProperties": false
}`

// configDefaults are the values of the fields a tenant leaves out.
var configDefaults = fmt.Sprintf(`{"image":%q}`, DefaultImage)

// descriptor is what the provider publishes in its ComputeProvider.
var descriptor = compute.Descriptor{
	Description: "A governed VM (ManagedVM) per tenant, whose cloud-init runs the tenant's containers with podman. " +
		"Creating, changing and deleting it waits for approval, as for every ManagedVM.",
	ConfigSchema:   []byte(configSchema),
	ConfigDefaults: []byte(configDefaults),
	// No secret source: a VM cannot read the tenant's Secrets, and a value written into its
	// cloud-init would be readable in the ManagedVM, its tickets and revisions.
	SecretSources: nil,
	// podman runs exec checks in the container; http and tcp checks would need tools the
	// container image may not have.
	HealthChecks: []string{v1alpha1.HealthCheckExec},
	PublicIP:     false,
}

// configOf is the tenant's providerConfig merged over the defaults. Unknown fields are refused
// here too, although admission checks the schema, so that a config stored before a schema
// change cannot be half-read.
func configOf(tc *v1alpha1.TenantCompute) (config, error) {
	var cfg config
	if err := json.Unmarshal([]byte(configDefaults), &cfg); err != nil {
		return config{}, err
	}
	if tc.Spec.ProviderConfig != nil && len(tc.Spec.ProviderConfig.Raw) > 0 {
		dec := json.NewDecoder(bytes.NewReader(tc.Spec.ProviderConfig.Raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&cfg); err != nil {
			return config{}, fmt.Errorf("spec.providerConfig is not a kubevirt provider config: %v", err)
		}
	}
	switch {
	case cfg.Image == "":
		return config{}, fmt.Errorf("spec.providerConfig.image must name a container disk image")
	case strings.ContainsAny(cfg.Image, " \t\r\n") || len(cfg.Image) > maxImage:
		return config{}, fmt.Errorf("spec.providerConfig.image must be an image reference without spaces, at most %d characters", maxImage)
	}
	return cfg, nil
}
