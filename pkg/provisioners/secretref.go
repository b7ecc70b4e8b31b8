package provisioners

import "strings"

// A secret reference is how a template says "this output is a key of a Secret" without the
// secret's value: score-k8s's newest encoding, the Secret's name and the key joined by "_"
// between two emoji markers. The name comes first and Kubernetes names hold no "_", so the first
// "_" splits the two even when the key has one.
const (
	secretRefPrefix = "🔐💬"
	secretRefSuffix = "💬🔐"
)

// SecretRef is a key of a Secret in the resource's namespace.
type SecretRef struct {
	// Name is the Secret's name.
	Name string
	// Key is the key in the Secret's data.
	Key string
}

// EncodeSecretRef is the template function encodeSecretRef: the reference to key of the Secret
// name, encoded as score-k8s encodes it, so that a template may also write one by hand.
func EncodeSecretRef(name, key string) string {
	return secretRefPrefix + name + "_" + key + secretRefSuffix
}

// ContainsSecretRef reports whether s holds the start of a secret reference anywhere, so a caller
// can make sure no reference reaches a place that takes plain values only.
func ContainsSecretRef(s string) bool {
	return strings.Contains(s, secretRefPrefix)
}
