//go:build tools

// Package tools pins the code generator's version in go.mod for hack/update-codegen.sh.
package tools

import _ "k8s.io/code-generator"
