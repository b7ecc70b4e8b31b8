package delivery

import (
	"crypto/sha256"
	"encoding/hex"
)

// AnnotationAdopt, set to "true" on an object that already exists on a target, lets the Kubectl
// engine take it over for an artifact that declares it: without it the engine refuses an
// existing object it did not create (one without this artifact's label and not in the
// target's last inventory), since it would later prune, and so delete, what it never owned.
// Only the live object's annotation counts, never the manifest's: whoever adopts must be able
// to edit the object on the target, not just the artifact.
const AnnotationAdopt = "gitops.plinth.dev/adopt"

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
