//go:build tools

// Package tools pins Flux's source-controller for hack/build-tools.sh.
package tools

import _ "github.com/fluxcd/source-controller"
