//go:build tools

// Package tools pins Flux's kustomize-controller for hack/build-tools.sh.
package tools

import _ "github.com/fluxcd/kustomize-controller"
