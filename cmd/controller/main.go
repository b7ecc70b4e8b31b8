// Command plinth-controller runs Plinth's controllers. See pkg/cmd/controller for its flags.
package main

import (
	"os"

	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/component-base/cli"

	"github.com/plinth-dev/plinth/pkg/cmd/controller"
)

func main() {
	ctx := genericapiserver.SetupSignalContext()
	os.Exit(cli.Run(controller.NewCommand(ctx)))
}
