package resourcebinding

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	networkingv1ac "k8s.io/client-go/applyconfigurations/networking/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
	"github.com/plinth-dev/plinth/pkg/errkind"
)

// ParamError is a binding whose params its provisioner cannot use. It is the user's to fix, so
// it is returned marked errkind.Stalled (paramError): the binding goes Failed with its message
// instead of being retried.
type ParamError struct {
	// Param is the name of the offending param.
	Param string
	// Message is one neutral sentence naming the param.
	Message string
}

func (e *ParamError) Error() string { return e.Message }

// paramError is the Stalled error of a param the user must fix.
func paramError(param, message string) error {
	return errkind.Stalled(&ParamError{Param: param, Message: message})
}

// route publishes a workload's service port under a host name and path with an Ingress, as
// score-k8s does with an HTTPRoute: params host (required), port (required, a port of the
// workload's service) and path (default "/", a prefix). It has no outputs.
type route struct {
	env     Env
	applied appliedIngresses
}

// RouteParams are a route binding's params, validated.
type RouteParams struct {
	Host string
	Port int32
	Path string
}

// ParseRouteParams validates a route's params.
func ParseRouteParams(params map[string]interface{}) (RouteParams, error) {
	out := RouteParams{Path: "/"}
	host, _ := params["host"].(string)
	switch {
	case host == "":
		return out, paramError("host", `The route param "host" is required.`)
	case len(validation.IsDNS1123Subdomain(strings.TrimPrefix(host, "*."))) > 0:
		return out, paramError("host", fmt.Sprintf("The route param \"host\" (%q) is not a valid DNS name.", host))
	}
	out.Host = host
	port, err := portParam(params["port"])
	if err != nil {
		return out, paramError("port", `The route param "port" must be a port number from 1 to 65535.`)
	}
	out.Port = port
	if p, ok := params["path"]; ok {
		path, _ := p.(string)
		if !strings.HasPrefix(path, "/") || strings.ContainsAny(path, " \t\n?#") {
			return out, paramError("path", `The route param "path" must be an absolute URL path such as "/" or "/api".`)
		}
		out.Path = path
	}
	return out, nil
}

// portParam accepts a JSON number or a numeric string (placeholders resolve to strings).
func portParam(v interface{}) (int32, error) {
	var n int64
	switch p := v.(type) {
	case float64:
		if p != float64(int64(p)) {
			return 0, fmt.Errorf("not an integer")
		}
		n = int64(p)
	case int64:
		n = p
	case string:
		var err error
		if n, err = strconv.ParseInt(p, 10, 32); err != nil {
			return 0, err
		}
	default:
		return 0, fmt.Errorf("missing")
	}
	if n < 1 || n > 65535 {
		return 0, fmt.Errorf("out of range")
	}
	return int32(n), nil
}

func (r *route) Provision(ctx context.Context, b *v1b1.ResourceBinding) (Result, error) {
	params, err := bindingParams(b)
	if err != nil {
		return Result{}, err
	}
	rp, err := ParseRouteParams(params)
	if err != nil {
		return Result{}, r.unpublish(ctx, b, err)
	}
	// The kubernetes runtime names the workload's Service after the workload.
	backend := networkingv1ac.IngressBackend().WithService(networkingv1ac.IngressServiceBackend().
		WithName(b.Spec.WorkloadRef.Name).WithPort(networkingv1ac.ServiceBackendPort().WithNumber(rp.Port)))
	rule := networkingv1ac.IngressRule().WithHost(rp.Host).WithHTTP(networkingv1ac.HTTPIngressRuleValue().WithPaths(
		networkingv1ac.HTTPIngressPath().WithPath(rp.Path).WithPathType(networkingv1.PathTypePrefix).WithBackend(backend)))
	owner := metav1ac.OwnerReference().WithAPIVersion(v1b1.SchemeGroupVersion.String()).WithKind("ResourceBinding").
		WithName(b.Name).WithUID(b.UID).WithController(true)
	ingress := networkingv1ac.Ingress(b.Name, b.Namespace).
		WithLabels(map[string]string{"app.kubernetes.io/managed-by": "plinth", "score.dev/resource-binding": b.Name}).
		WithOwnerReferences(owner).
		WithSpec(networkingv1ac.IngressSpec().WithRules(rule))
	if r.env.IngressClassName != "" {
		ingress.Spec.WithIngressClassName(r.env.IngressClassName)
	}
	published := Result{Ready: true, Values: map[string]string{}, Message: "The route is published."}
	manifest, err := json.Marshal(ingress)
	if err != nil {
		return Result{}, err
	}
	key := cache.NewObjectName(b.Namespace, b.Name)
	live, err := r.live(ctx, b)
	switch {
	case err != nil:
		return Result{}, err
	case live != nil && !metav1.IsControlledBy(live, b):
		return Result{}, foreignObject("Ingress", b.Name, b)
	case live != nil && r.env.Ingresses != nil && r.applied.upToDate(key, manifest, live):
		return published, nil
	}
	applied, err := r.env.Client.NetworkingV1().Ingresses(b.Namespace).Apply(ctx, ingress, metav1.ApplyOptions{FieldManager: fieldManager, Force: true})
	if err != nil {
		if apierrors.IsInvalid(err) {
			// The cluster's Ingress validation is stricter than ParseRouteParams (an IP as
			// host, "//" or "/./" in a path): the params are still the user's to fix.
			return Result{}, r.unpublish(ctx, b, errkind.Stalled(ingressParamError(err)))
		}
		return Result{}, err
	}
	r.applied.record(key, manifest, applied)
	// An Ingress has no readiness of its own that every ingress controller reports; it is
	// bound once the cluster has accepted it.
	return published, nil
}

// forget drops what was applied for a binding that is gone.
func (r *route) forget(key cache.ObjectName) { r.applied.forget(key) }

// unpublish deletes the route's Ingress because its params went bad (a route must not keep
// publishing the old host and path) and returns paramErr (Stalled), or the deletion's error.
// An Ingress of that name the binding does not control is not the route's to delete.
func (r *route) unpublish(ctx context.Context, b *v1b1.ResourceBinding, paramErr error) error {
	r.applied.forget(cache.NewObjectName(b.Namespace, b.Name))
	live, err := r.live(ctx, b)
	if err != nil {
		return err
	}
	if live == nil || !metav1.IsControlledBy(live, b) {
		return paramErr
	}
	opts := metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: ptr.To(live.UID)}}
	if err := r.env.Client.NetworkingV1().Ingresses(b.Namespace).Delete(ctx, b.Name, opts); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return err
	}
	return paramErr
}

// live is the Ingress of the binding's name, from the cache (which holds every Ingress, so
// what it lacks is not there) or, without one, from the cluster; nil when there is none.
func (r *route) live(ctx context.Context, b *v1b1.ResourceBinding) (*networkingv1.Ingress, error) {
	var live *networkingv1.Ingress
	var err error
	if r.env.Ingresses != nil {
		live, err = r.env.Ingresses.Ingresses(b.Namespace).Get(b.Name)
	} else {
		live, err = r.env.Client.NetworkingV1().Ingresses(b.Namespace).Get(ctx, b.Name, metav1.GetOptions{})
	}
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return live, err
}

// bindingParams decodes a binding's params; a binding without params has an empty map.
func bindingParams(b *v1b1.ResourceBinding) (map[string]interface{}, error) {
	if b.Spec.Params == nil {
		return map[string]interface{}{}, nil
	}
	params, err := b.Spec.Params.Object()
	if err != nil {
		return nil, paramError("params", "The resource params are not a JSON object.")
	}
	if params == nil {
		params = map[string]interface{}{}
	}
	return params, nil
}

// ingressParamError turns the cluster's refusal of a route's Ingress into a ParamError that
// names the route param behind the refused field.
func ingressParamError(err error) *ParamError {
	param := "params"
	if status, ok := err.(apierrors.APIStatus); ok && status.Status().Details != nil {
	causes:
		for _, cause := range status.Status().Details.Causes {
			// The innermost named segment says what was refused: spec.rules[0].host,
			// spec.rules[0].http.paths[0].path, ...backend.service.port.number.
			segments := strings.Split(cause.Field, ".")
			for i := len(segments) - 1; i >= 0; i-- {
				switch segment := segments[i]; segment {
				case "host", "path", "port":
					param = segment
					break causes
				}
			}
		}
	}
	return &ParamError{Param: param, Message: fmt.Sprintf("The route param %q is not accepted by the cluster.", param)}
}
