// Package patchtypes serves Plinth's PATCH without strategic merge patch, the way Kubernetes
// serves custom resources: JSON patch, JSON merge patch and server-side apply only, and the
// published OpenAPI (v2 and v3) says so.
//
// Why: client-side kubectl apply and kubectl diff compute a strategic merge patch whenever the
// OpenAPI says a PATCH consumes one. That patch needs metadata for every object it descends
// into, and Plinth's API has two kinds of object it cannot describe: name-keyed maps of objects
// (a Workload's containers, resources and ports) and free-form documents (an inline Score
// document, resource params and metadata, chart values, providerConfig, event payloads). On the
// client, the v3 lookup (strategicpatch.PatchMetaFromOpenAPIV3) only finds named properties, so
// it fails on any key under additionalProperties or x-kubernetes-preserve-unknown-fields
// ("unable to find api field"); the v2 lookup expects a kind and finds a map ("expected kind,
// but got map"). kubectl prints both warnings and falls back to a JSON merge patch. On the
// server, a strategic merge patch is merged with metadata from Go struct tags, which a RawObject
// or a map of structs cannot give, so the same change sent as one fails there.
//
// The only schema that lets a strategic merge patch through such a field is
// x-kubernetes-patch-strategy: replace, which sends the field whole: every apply would be
// "configured" (never "unchanged"), and a patch of one container would drop the others. A JSON
// merge patch merges those maps key by key and deletes a key with null, which is what the
// documents need; so that is what kubectl is told to use, without warnings.
package patchtypes

import (
	"net/http"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/endpoints/handlers/negotiation"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/features"
	genericapiserver "k8s.io/apiserver/pkg/server"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// strategicMerge is the media type of a strategic merge patch.
const strategicMerge = string(types.StrategicMergePatchType)

// Install removes strategic merge patch from the server's PATCH: from what the OpenAPI v2 and
// v3 specs of cfg say every PATCH consumes (set them first), and from what the handler
// accepts. Earlier PostProcessSpec and BuildHandlerChainFunc settings still run.
func Install(cfg *genericapiserver.Config) {
	if cfg.OpenAPIConfig != nil {
		next := cfg.OpenAPIConfig.PostProcessSpec
		cfg.OpenAPIConfig.PostProcessSpec = func(s *spec.Swagger) (*spec.Swagger, error) {
			if next != nil {
				var err error
				if s, err = next(s); err != nil {
					return nil, err
				}
			}
			return OpenAPIV2(s), nil
		}
	}
	if cfg.OpenAPIV3Config != nil {
		next := cfg.OpenAPIV3Config.PostProcessSpec
		cfg.OpenAPIV3Config.PostProcessSpec = func(s *spec3.OpenAPI) (*spec3.OpenAPI, error) {
			if next != nil {
				var err error
				if s, err = next(s); err != nil {
					return nil, err
				}
			}
			return OpenAPIV3(s), nil
		}
	}
	build := cfg.BuildHandlerChainFunc
	cfg.BuildHandlerChainFunc = func(apiHandler http.Handler, c *genericapiserver.Config) http.Handler {
		// Inside the chain: the request is authenticated, authorized and has its RequestInfo,
		// so the refusal comes where the PATCH handler's own would.
		return build(WithoutStrategicMerge(apiHandler, c.Serializer), c)
	}
}

// OpenAPIV2 drops strategic merge patch from the consumes of every PATCH operation.
func OpenAPIV2(s *spec.Swagger) *spec.Swagger {
	if s == nil || s.Paths == nil {
		return s
	}
	for _, item := range s.Paths.Paths {
		if op := item.Patch; op != nil {
			kept := op.Consumes[:0]
			for _, c := range op.Consumes {
				if c != strategicMerge {
					kept = append(kept, c)
				}
			}
			op.Consumes = kept
		}
	}
	return s
}

// OpenAPIV3 drops strategic merge patch from the request body of every PATCH operation.
func OpenAPIV3(s *spec3.OpenAPI) *spec3.OpenAPI {
	if s == nil || s.Paths == nil {
		return s
	}
	for _, item := range s.Paths.Paths {
		if item != nil && item.Patch != nil && item.Patch.RequestBody != nil {
			delete(item.Patch.RequestBody.Content, strategicMerge)
		}
	}
	return s
}

// Accepted lists the patch media types the server takes: those of k8s.io/apiserver's PATCH
// handler without strategic merge patch.
func Accepted() []string {
	accepted := []string{string(types.JSONPatchType), string(types.MergePatchType), string(types.ApplyYAMLPatchType)}
	if utilfeature.DefaultFeatureGate.Enabled(features.CBORServingAndStorage) {
		accepted = append(accepted, string(types.ApplyCBORPatchType))
	}
	return accepted
}

// WithoutStrategicMerge answers a resource PATCH whose body is a strategic merge patch with
// 415 Unsupported Media Type and the media types it accepts, as for a custom resource: kubectl
// patch then names the --type to use, and Kubernetes' garbage collector retries with a JSON
// merge patch. Every other request goes to handler. It needs the RequestInfo in the context.
func WithoutStrategicMerge(handler http.Handler, s runtime.NegotiatedSerializer) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		info, ok := request.RequestInfoFrom(req.Context())
		if ok && info.IsResourceRequest && info.Verb == "patch" && mediaType(req.Header.Get("Content-Type")) == strategicMerge {
			gv := schema.GroupVersion{Group: info.APIGroup, Version: info.APIVersion}
			responsewriters.ErrorNegotiated(negotiation.NewUnsupportedMediaTypeError(Accepted()), s, gv, w, req)
			return
		}
		handler.ServeHTTP(w, req)
	})
}

// mediaType is a Content-Type without its parameters, as the PATCH handler compares it.
func mediaType(contentType string) string {
	mt, _, _ := strings.Cut(contentType, ";")
	return strings.TrimSpace(mt)
}
