// Package fuzzer fills platform.plinth.dev objects with random, encodable values for round-trip
// tests.
package fuzzer

import (
	runtimeserializer "k8s.io/apimachinery/pkg/runtime/serializer"
)

// Funcs returns the fuzz functions of the platform.plinth.dev group: the defaults of
// randfill suffice, since the group has no defaulted fields.
var Funcs = func(codecs runtimeserializer.CodecFactory) []interface{} {
	return nil
}
