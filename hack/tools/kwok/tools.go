//go:build tools

// Package tools records the kwok main package this module builds (see hack/build-tools.sh).
package tools

import _ "sigs.k8s.io/kwok/cmd/kwok"
