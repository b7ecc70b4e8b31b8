// Command plinth-apiserver serves Plinth's APIs. See pkg/cmd/apiserver for its flags.
package main

import (
	"os"
	"runtime/debug"

	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/component-base/cli"

	"github.com/plinth-dev/plinth/pkg/cmd/apiserver"
)

// gcPercent is plinth-apiserver's GOGC unless the environment sets one. Go's default, 100,
// spent 18 % of plinth-apiserver's CPU on garbage collection under a get load; 200 cut its CPU
// per get by about 15 % for about 35 % more resident memory (docs/benchmarks.md, "Reads
// against built-in kinds"). 400 saved no more and doubled the memory. GOGC and GOMEMLIMIT in
// the container's environment still decide, as for any Go program.
const gcPercent = 200

func main() {
	defaultGC(os.LookupEnv)
	ctx := genericapiserver.SetupSignalContext()
	os.Exit(cli.Run(apiserver.NewCommand(ctx, apiserver.NewOptions(os.Stdout))))
}

// defaultGC sets the GC target to gcPercent unless GOGC is set, and says whether it did.
func defaultGC(lookup func(string) (string, bool)) bool {
	if _, set := lookup("GOGC"); set {
		return false
	}
	debug.SetGCPercent(gcPercent)
	return true
}
