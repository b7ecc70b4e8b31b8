package delivery

import (
	"crypto/sha256"
	"encoding/hex"
)

// ArtifactLabel is the value of the gitops.plinth.dev/artifact label (LabelArtifact) on what
// an engine creates on a target for the OCIArtifact namespace/name: a hash, since a namespace
// and a name together may be longer than a label value's 63 characters. Both engines use it,
// so a target's objects of one artifact are selected alike whichever engine made them.
func ArtifactLabel(namespace, name string) string {
	sum := sha256.Sum256([]byte(namespace + "/" + name))
	return hex.EncodeToString(sum[:])[:32]
}

// ArtifactAnnotation is the value of the gitops.plinth.dev/artifact annotation
// (AnnotationArtifact): <namespace>/<name> of the OCIArtifact, readable where the label is not.
func ArtifactAnnotation(namespace, name string) string { return namespace + "/" + name }
