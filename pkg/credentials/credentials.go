// Package credentials gives plinth-controller REST configs for target clusters. A Provider
// answers by cluster name; the first one, ClusterProvider, reads a Cluster's sealed kubeconfig
// through the clusters/credentials subresource and decrypts it with the key file it shares
// with plinth-apiserver. Later providers (Vault, external secrets) plug in behind the same
// interface.
package credentials

import (
	"context"
	"errors"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	platform "github.com/plinth-dev/plinth/pkg/apis/platform/v1alpha1"
)

// Provider gives the REST config of a target cluster.
type Provider interface {
	// GetRESTConfig returns a config for the named cluster; callers may change the copy.
	GetRESTConfig(ctx context.Context, clusterName string) (*rest.Config, error)
	// Type names the provider, for example "kubeconfig".
	Type() string
}

// AdditionalData binds a sealed kubeconfig to the Cluster it was sealed for: its name and UID.
// A ciphertext copied onto another Cluster, or onto a Cluster deleted and created again under
// the same name, does not decrypt.
func AdditionalData(name string, uid types.UID) []byte {
	return []byte("platform.plinth.dev/clusters/" + name + "/" + string(uid))
}

// Reason classifies why credentials could not be had; all but ReasonUnavailable become the
// CredentialsValid condition's reason, declared by the platform API group.
type Reason string

const (
	// ReasonUnknownKey: the key that sealed the kubeconfig is not in the key file.
	ReasonUnknownKey Reason = platform.ReasonUnknownEncryptionKey
	// ReasonDecryptionFailed: the ciphertext does not open with its key.
	ReasonDecryptionFailed Reason = platform.ReasonDecryptionFailed
	// ReasonInvalidKubeconfig: the decrypted kubeconfig is not one Plinth uses.
	ReasonInvalidKubeconfig Reason = platform.ReasonInvalidKubeconfig
	// ReasonUnavailable: the credentials could not be read from the API. It reaches no
	// status: the caller retries with its error.
	ReasonUnavailable Reason = "CredentialsUnavailable"
)

// Error is a failure to obtain a cluster's credentials. Its message never contains any part
// of the kubeconfig.
type Error struct {
	Reason  Reason
	Message string
}

func (e *Error) Error() string { return e.Message }

// ReasonOf returns the reason of a credentials error, or "" for other errors.
func ReasonOf(err error) Reason {
	var e *Error
	if errors.As(err, &e) {
		return e.Reason
	}
	return ""
}
