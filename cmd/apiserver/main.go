// Command plinth-apiserver serves Plinth's APIs. See pkg/cmd/apiserver for its flags.
package main

import (
	"os"

	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/component-base/cli"

	"github.com/plinth-dev/plinth/pkg/cmd/apiserver"
)

func main() {
	ctx := genericapiserver.SetupSignalContext()
	os.Exit(cli.Run(apiserver.NewCommand(ctx, apiserver.NewOptions(os.Stdout))))
}
