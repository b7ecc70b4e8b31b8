//go:build tools

// Package tools records the etcd main packages this module builds (see hack/build-tools.sh):
// the server, etcdctl (snapshot save) and etcdutl (snapshot restore), all of one etcd version.
package tools

import (
	_ "go.etcd.io/etcd/etcdctl/v3"
	_ "go.etcd.io/etcd/etcdutl/v3"
	_ "go.etcd.io/etcd/server/v3"
)
