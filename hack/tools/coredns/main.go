// Command coredns is CoreDNS v1.15 with only the plugins a local cluster's DNS needs (as
// CoreDNS's own plugin.cfg selects plugins for a custom build): kubernetes answers for
// Services and pods (a StatefulSet's members by name), forward sends the rest upstream, cache,
// loop, errors, bind, ready and health. The local platform runs it for its real node's pods.
package main

import (
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/forward"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loop"
	_ "github.com/coredns/coredns/plugin/ready"
)

func main() {
	coremain.Run()
}
