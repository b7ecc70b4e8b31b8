// Package fuzzer fills compute.plinth.dev objects with random, encodable values for round-trip
// tests.
package fuzzer

import (
	runtimeserializer "k8s.io/apimachinery/pkg/runtime/serializer"

	commonfuzzer "github.com/plinth-dev/plinth/pkg/apis/common/fuzzer"
)

// Funcs returns the fuzz functions of the compute.plinth.dev group: providerConfig and the
// providers' schemas are raw JSON objects.
var Funcs = func(codecs runtimeserializer.CodecFactory) []interface{} {
	return []interface{}{commonfuzzer.RawObject}
}
