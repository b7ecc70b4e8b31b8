package patchtypes

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	genericapifilters "k8s.io/apiserver/pkg/endpoints/filters"
	"k8s.io/apiserver/pkg/endpoints/request"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/plinth-dev/plinth/pkg/apiserver"
)

// allPatchTypes is what k8s.io/apiserver's installer declares for every PATCH route.
var allPatchTypes = []string{string(types.JSONPatchType), string(types.MergePatchType), string(types.StrategicMergePatchType), string(types.ApplyYAMLPatchType)}

func swagger() *spec.Swagger {
	patch := &spec.Operation{OperationProps: spec.OperationProps{ID: "patchWorkload", Consumes: slices.Clone(allPatchTypes)}}
	put := &spec.Operation{OperationProps: spec.OperationProps{ID: "replaceWorkload", Consumes: []string{"*/*"}}}
	return &spec.Swagger{SwaggerProps: spec.SwaggerProps{Paths: &spec.Paths{Paths: map[string]spec.PathItem{
		"/apis/score.dev/v1b1/namespaces/{namespace}/workloads/{name}":        {PathItemProps: spec.PathItemProps{Patch: patch, Put: put}},
		"/apis/score.dev/v1b1/namespaces/{namespace}/workloads/{name}/status": {PathItemProps: spec.PathItemProps{Patch: &spec.Operation{OperationProps: spec.OperationProps{Consumes: slices.Clone(allPatchTypes)}}}},
		"/apis/score.dev/v1b1/workloads":                                      {PathItemProps: spec.PathItemProps{Get: &spec.Operation{}}},
	}}}}
}

func openAPI() *spec3.OpenAPI {
	body := func() *spec3.RequestBody {
		content := map[string]*spec3.MediaType{}
		for _, t := range allPatchTypes {
			content[t] = &spec3.MediaType{}
		}
		return &spec3.RequestBody{RequestBodyProps: spec3.RequestBodyProps{Content: content}}
	}
	put := &spec3.Operation{OperationProps: spec3.OperationProps{RequestBody: &spec3.RequestBody{RequestBodyProps: spec3.RequestBodyProps{Content: map[string]*spec3.MediaType{"*/*": {}}}}}}
	return &spec3.OpenAPI{Paths: &spec3.Paths{Paths: map[string]*spec3.Path{
		"/apis/score.dev/v1b1/namespaces/{namespace}/workloads/{name}":        {PathProps: spec3.PathProps{Patch: &spec3.Operation{OperationProps: spec3.OperationProps{RequestBody: body()}}, Put: put}},
		"/apis/score.dev/v1b1/namespaces/{namespace}/workloads/{name}/status": {PathProps: spec3.PathProps{Patch: &spec3.Operation{OperationProps: spec3.OperationProps{RequestBody: body()}}}},
		"/apis/score.dev/v1b1/workloads":                                      {PathProps: spec3.PathProps{Get: &spec3.Operation{}}},
		// An operation without a request body, which kubectl reads as malformed, stays so.
		"/apis/score.dev/v1b1/namespaces/{namespace}/workloadplans/{name}": {PathProps: spec3.PathProps{Patch: &spec3.Operation{}}},
	}}}
}

var withoutStrategicMerge = []string{string(types.JSONPatchType), string(types.MergePatchType), string(types.ApplyYAMLPatchType)}

// kubectl (apply, diff) asks the v2 spec what PATCH consumes: strategic merge patch is gone
// from every PATCH, main resource and subresource, and nothing else changes.
func TestOpenAPIV2(t *testing.T) {
	s := OpenAPIV2(swagger())
	for path, item := range s.Paths.Paths {
		if item.Patch != nil {
			if diff := cmp.Diff(withoutStrategicMerge, item.Patch.Consumes); diff != "" {
				t.Errorf("%s PATCH consumes (-want +got):\n%s", path, diff)
			}
		}
	}
	if put := s.Paths.Paths["/apis/score.dev/v1b1/namespaces/{namespace}/workloads/{name}"].Put; !slices.Equal(put.Consumes, []string{"*/*"}) {
		t.Errorf("PUT consumes %v, want it unchanged", put.Consumes)
	}
	if OpenAPIV2(nil) != nil || OpenAPIV2(&spec.Swagger{}).Paths != nil {
		t.Error("a spec without paths must be returned as is")
	}
}

// kubectl asks the v3 spec whether a PATCH's request body may be a strategic merge patch; the
// first PATCH of the kind it finds decides, so it must be gone from all of them.
func TestOpenAPIV3(t *testing.T) {
	s := OpenAPIV3(openAPI())
	for path, item := range s.Paths.Paths {
		if item.Patch == nil || item.Patch.RequestBody == nil {
			continue
		}
		got := sets.List(sets.KeySet(item.Patch.RequestBody.Content))
		if diff := cmp.Diff(sets.List(sets.New(withoutStrategicMerge...)), got); diff != "" {
			t.Errorf("%s PATCH request body (-want +got):\n%s", path, diff)
		}
	}
	if put := s.Paths.Paths["/apis/score.dev/v1b1/namespaces/{namespace}/workloads/{name}"].Put; len(put.RequestBody.Content) != 1 {
		t.Errorf("PUT request body %v, want it unchanged", put.RequestBody.Content)
	}
	if s.Paths.Paths["/apis/score.dev/v1b1/namespaces/{namespace}/workloadplans/{name}"].Patch.RequestBody != nil {
		t.Error("a PATCH without a request body gained one")
	}
	if OpenAPIV3(nil) != nil || OpenAPIV3(&spec3.OpenAPI{}).Paths != nil {
		t.Error("a spec without paths must be returned as is")
	}
}

// withRequestInfo is the part of the generic handler chain WithoutStrategicMerge relies on.
func withRequestInfo(h http.Handler) http.Handler {
	return genericapifilters.WithRequestInfo(h, &request.RequestInfoFactory{APIPrefixes: sets.NewString("api", "apis"), GrouplessAPIPrefixes: sets.NewString("api")})
}

func serve(h http.Handler, method, path, contentType string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, strings.NewReader(`{"spec":{}}`))
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

const workloadPath = "/apis/score.dev/v1b1/namespaces/team-a/workloads/shop"

// A strategic merge patch is refused as for a custom resource, 415 with the accepted types;
// every other request reaches the API.
func TestWithoutStrategicMerge(t *testing.T) {
	reached := false
	api := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { reached = true; w.WriteHeader(http.StatusOK) })
	h := withRequestInfo(WithoutStrategicMerge(api, apiserver.Codecs))
	for name, tc := range map[string]struct {
		method, path, contentType string
		refused                   bool
	}{
		"strategic merge patch":               {http.MethodPatch, workloadPath, string(types.StrategicMergePatchType), true},
		"with a charset":                      {http.MethodPatch, workloadPath, string(types.StrategicMergePatchType) + "; charset=utf-8", true},
		"of the status":                       {http.MethodPatch, workloadPath + "/status", string(types.StrategicMergePatchType), true},
		"of a cluster-scoped kind":            {http.MethodPatch, "/apis/platform.plinth.dev/v1alpha1/clusters/edge", string(types.StrategicMergePatchType), true},
		"merge patch":                         {http.MethodPatch, workloadPath, string(types.MergePatchType), false},
		"JSON patch":                          {http.MethodPatch, workloadPath, string(types.JSONPatchType), false},
		"server-side apply":                   {http.MethodPatch, workloadPath, string(types.ApplyYAMLPatchType), false},
		"no content type":                     {http.MethodPatch, workloadPath, "", false},
		"update":                              {http.MethodPut, workloadPath, "application/json", false},
		"a non-resource path":                 {http.MethodPatch, "/healthz", string(types.StrategicMergePatchType), false},
		"strategic merge type on a non-patch": {http.MethodPost, "/apis/score.dev/v1b1/namespaces/team-a/workloads", string(types.StrategicMergePatchType), false},
	} {
		t.Run(name, func(t *testing.T) {
			reached = false
			rec := serve(h, tc.method, tc.path, tc.contentType)
			if reached == tc.refused {
				t.Fatalf("reached the API: %t, want %t", reached, !tc.refused)
			}
			if !tc.refused {
				return
			}
			if rec.Code != http.StatusUnsupportedMediaType {
				t.Errorf("status %d, want 415", rec.Code)
			}
			body := rec.Body.String()
			for _, want := range append([]string{`"reason":"UnsupportedMediaType"`}, withoutStrategicMerge...) {
				if !strings.Contains(body, want) {
					t.Errorf("response lacks %s:\n%s", want, body)
				}
			}
			if strings.Contains(body, "strategic") {
				t.Errorf("response offers strategic merge patch:\n%s", body)
			}
		})
	}
}

// Install runs earlier post-processors and handler chains, then removes strategic merge patch
// from both specs and from the handler.
func TestInstall(t *testing.T) {
	var v2Earlier, v3Earlier bool
	cfg := &genericapiserver.Config{
		Serializer: apiserver.Codecs,
		OpenAPIConfig: &common.Config{PostProcessSpec: func(s *spec.Swagger) (*spec.Swagger, error) {
			v2Earlier = true
			return s, nil
		}},
		OpenAPIV3Config: &common.OpenAPIV3Config{PostProcessSpec: func(s *spec3.OpenAPI) (*spec3.OpenAPI, error) {
			v3Earlier = true
			return s, nil
		}},
		// Stands for DefaultBuildHandlerChain, which sets the RequestInfo.
		BuildHandlerChainFunc: func(h http.Handler, _ *genericapiserver.Config) http.Handler { return withRequestInfo(h) },
	}
	Install(cfg)

	v2, err := cfg.OpenAPIConfig.PostProcessSpec(swagger())
	if err != nil || !v2Earlier {
		t.Fatalf("v2 post-processing: %v, earlier ran: %t", err, v2Earlier)
	}
	if consumes := v2.Paths.Paths["/apis/score.dev/v1b1/namespaces/{namespace}/workloads/{name}"].Patch.Consumes; slices.Contains(consumes, string(types.StrategicMergePatchType)) {
		t.Errorf("v2 PATCH consumes %v", consumes)
	}
	v3, err := cfg.OpenAPIV3Config.PostProcessSpec(openAPI())
	if err != nil || !v3Earlier {
		t.Fatalf("v3 post-processing: %v, earlier ran: %t", err, v3Earlier)
	}
	if _, ok := v3.Paths.Paths["/apis/score.dev/v1b1/namespaces/{namespace}/workloads/{name}"].Patch.RequestBody.Content[string(types.StrategicMergePatchType)]; ok {
		t.Error("v3 PATCH still takes a strategic merge patch")
	}

	h := cfg.BuildHandlerChainFunc(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }), cfg)
	if rec := serve(h, http.MethodPatch, workloadPath, string(types.StrategicMergePatchType)); rec.Code != http.StatusUnsupportedMediaType {
		t.Errorf("strategic merge patch through the installed chain: %d, want 415", rec.Code)
	}
	if rec := serve(h, http.MethodPatch, workloadPath, string(types.MergePatchType)); rec.Code != http.StatusOK {
		t.Errorf("merge patch through the installed chain: %d, want 200", rec.Code)
	}

	failing := &genericapiserver.Config{
		OpenAPIConfig:         &common.Config{PostProcessSpec: func(*spec.Swagger) (*spec.Swagger, error) { return nil, errors.New("boom") }},
		BuildHandlerChainFunc: genericapiserver.DefaultBuildHandlerChain,
	}
	Install(failing)
	if _, err := failing.OpenAPIConfig.PostProcessSpec(swagger()); err == nil {
		t.Error("an earlier post-processor's error was dropped")
	}
}
