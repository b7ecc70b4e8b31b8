//go:build tools

// Package tools records the etcd main package this module builds (see hack/build-tools.sh).
package tools

import _ "go.etcd.io/etcd/server/v3"
