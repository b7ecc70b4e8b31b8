package kubernetes

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/plinth-dev/plinth/pkg/apis/compute/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/errkind"
)

// providerConfig is the kubernetes provider's spec.providerConfig.
type providerConfig struct {
	// Cluster is the registered Cluster to run the tenant on; empty means the cluster Plinth
	// serves (the one plinth-controller runs against).
	Cluster string `json:"cluster,omitempty"`
	// Replicas is how many copies of the tenant's pod run, 1-100.
	Replicas int32 `json:"replicas"`
}

// configKeys are the fields of providerConfig, spelled as the schema spells them.
var configKeys = sets.New("cluster", "replicas")

// maxReplicas bounds providerConfig.replicas.
const maxReplicas = 100

// configSchema is the JSON Schema of providerConfig that the ComputeProvider publishes and
// plinth-apiserver validates against at admission. There is no service type: networking.publicIP
// already asks for a LoadBalancer.
var configSchema = []byte(`{
  "type": "object",
  "additionalProperties": false,
  "properties": {
    "cluster": {
      "type": "string",
      "minLength": 1,
      "description": "Name of the registered Cluster (kubectl get clusters) to run the tenant on. Left out, the tenant runs on the cluster Plinth serves."
    },
    "replicas": {
      "type": "integer",
      "minimum": 1,
      "maximum": 100,
      "description": "How many copies of the tenant's containers run. spec.suspended scales them to none."
    }
  }
}`)

// configDefaults are the values of the fields a providerConfig leaves out.
var configDefaults = []byte(`{"replicas": 1}`)

// parseConfig reads spec.providerConfig over the defaults. The API validated it against the
// schema at admission; it is checked again because a stored object may predate a schema change.
func parseConfig(tc *v1alpha1.TenantCompute) (providerConfig, error) {
	var cfg providerConfig
	if err := json.Unmarshal(configDefaults, &cfg); err != nil {
		return cfg, err
	}
	if tc.Spec.ProviderConfig != nil && len(tc.Spec.ProviderConfig.Raw) > 0 {
		// encoding/json matches field names without regard to case; the keys are held to
		// the schema's spelling first, so that "Cluster" is never read as the cluster
		// (admission asks for the use of the Cluster that "cluster" names).
		var keys map[string]json.RawMessage
		if err := json.Unmarshal(tc.Spec.ProviderConfig.Raw, &keys); err != nil {
			return cfg, errkind.Stalledf("spec.providerConfig: %s", configError(err))
		}
		for _, k := range sets.List(sets.KeySet(keys)) {
			if !configKeys.Has(k) {
				return cfg, errkind.Stalledf("spec.providerConfig: unknown field %q", k)
			}
		}
		dec := json.NewDecoder(bytes.NewReader(tc.Spec.ProviderConfig.Raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&cfg); err != nil {
			return cfg, errkind.Stalledf("spec.providerConfig: %s", configError(err))
		}
	}
	if cfg.Replicas < 1 || cfg.Replicas > maxReplicas {
		return cfg, errkind.Stalledf("spec.providerConfig.replicas: must be between 1 and %d", maxReplicas)
	}
	return cfg, nil
}

// configError is a decoding error without Go type names.
func configError(err error) string {
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) {
		if typeErr.Field == "" {
			return "must be an object"
		}
		return fmt.Sprintf("field %s has the wrong type", typeErr.Field)
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}
