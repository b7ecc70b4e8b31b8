// Package provisioners reads and runs Score template provisioners in score-k8s's provisioner
// file format, unchanged: a file is a YAML list of entries (uri, type, class, id, description,
// init, state, shared, outputs, manifests, expected_outputs, supported_params), and an entry of
// such a file is a v1b1.ProvisionerSpec.
//
// The package is pure: it parses and validates entries (ParseFile, Validate), compiles their
// templates once (Compile) and renders them for one resource (Template.Render) with the data and
// the semantics score-k8s gives them, encodes and splits secret references (EncodeSecretRef,
// SplitOutputs), picks the provisioner of a resource from several sources (Set.Match), and
// carries Plinth's built-in template provisioners (BuiltIn). Reading state, applying manifests
// and publishing outputs belong to the controller that calls it.
//
// Only template:// provisioners exist here: plinth-controller runs no commands, so cmd://
// entries, which score-k8s runs as local programs, are refused.
package provisioners
