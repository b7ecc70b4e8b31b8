// Command models-schema prints the OpenAPI v2 definitions of every Plinth type, which
// applyconfiguration-gen reads to generate the Extract* functions of the apply configurations.
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/plinth-dev/plinth/pkg/generated/openapi"
)

func main() {
	if err := output(); err != nil {
		fmt.Fprintf(os.Stderr, "models-schema: %v\n", err)
		os.Exit(1)
	}
}

func output() error {
	refFunc := func(name string) spec.Ref {
		return spec.MustCreateRef(fmt.Sprintf("#/definitions/%s", name))
	}
	defs := openapi.GetOpenAPIDefinitions(refFunc)
	schemaDefs := make(map[string]spec.Schema, len(defs))
	for name, def := range defs {
		// A type may embed a separate v2 schema; this output is always v2.
		if embedded, ok := def.Schema.Extensions[common.ExtensionV2Schema]; ok {
			if v2, ok := embedded.(spec.Schema); ok {
				schemaDefs[name] = v2
				continue
			}
		}
		schemaDefs[name] = def.Schema
	}
	data, err := json.Marshal(&spec.Swagger{SwaggerProps: spec.SwaggerProps{
		Definitions: schemaDefs,
		Info:        &spec.Info{InfoProps: spec.InfoProps{Title: "Plinth", Version: "unversioned"}},
		Swagger:     "2.0",
	}})
	if err != nil {
		return err
	}
	_, err = os.Stdout.Write(data)
	return err
}
