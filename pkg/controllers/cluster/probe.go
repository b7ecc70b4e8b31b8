package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	platform "github.com/plinth-dev/plinth/pkg/apis/platform/v1alpha1"
)

// kubevirtResource is KubeVirt's installation resource; virt-operator reports the deployed
// version and the configured feature gates on it.
var kubevirtResource = schema.GroupVersionResource{Group: "kubevirt.io", Version: "v1", Resource: "kubevirts"}

// Finding is what one probe of a cluster found.
type Finding struct {
	Phase             platform.ClusterPhase
	KubernetesVersion string
	KubevirtVersion   string
	EnabledFeatures   []string
	// Reachable and KubeVirt are the conditions' status, reason and message.
	Reachable Verdict
	KubeVirt  Verdict
}

// Verdict is one condition's outcome.
type Verdict struct {
	Status  metav1.ConditionStatus
	Reason  string
	Message string
}

// Prober probes a cluster through a REST config.
type Prober func(ctx context.Context, cfg *rest.Config) Finding

// Probe asks the cluster for its version and readiness, then KubeVirt for its version and
// feature gates. Every request has timeout: an unreachable cluster costs one timeout, not a
// stuck worker.
func Probe(timeout time.Duration) Prober {
	return func(ctx context.Context, cfg *rest.Config) Finding {
		cfg = rest.CopyConfig(cfg)
		cfg.Timeout = timeout
		kube, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return unhealthy("ProbeFailed", fmt.Sprintf("No client for the cluster: %v", err))
		}
		version, err := kube.Discovery().ServerVersion()
		if err != nil {
			return failed(cfg.Host, err)
		}
		if err := kube.Discovery().RESTClient().Get().AbsPath("/readyz").Do(ctx).Error(); err != nil {
			f := failed(cfg.Host, err)
			if f.Phase == platform.ClusterPhaseUnhealthy {
				f.Reachable.Reason, f.Reachable.Message = "NotReady", fmt.Sprintf("The API server at %s answers but is not ready.", cfg.Host)
			}
			return f
		}
		f := Finding{
			Phase:             platform.ClusterPhaseHealthy,
			KubernetesVersion: version.GitVersion,
			Reachable:         Verdict{metav1.ConditionTrue, "Ready", fmt.Sprintf("The API server at %s is ready.", cfg.Host)},
		}
		dyn, err := dynamic.NewForConfig(cfg)
		if err != nil {
			f.KubeVirt = Verdict{metav1.ConditionUnknown, "ProbeFailed", err.Error()}
			return f
		}
		f.KubeVirt, f.KubevirtVersion, f.EnabledFeatures = detectKubeVirt(ctx, dyn)
		return f
	}
}

// detectKubeVirt reads the KubeVirt resource: its observed version, its phase and the
// feature gates of its developer configuration.
func detectKubeVirt(ctx context.Context, dyn dynamic.Interface) (Verdict, string, []string) {
	list, err := dyn.Resource(kubevirtResource).List(ctx, metav1.ListOptions{Limit: 1})
	switch {
	case apierrors.IsNotFound(err) || (err == nil && len(list.Items) == 0):
		return Verdict{metav1.ConditionFalse, "NotInstalled", "KubeVirt is not installed on the cluster."}, "", nil
	case apierrors.IsForbidden(err):
		return Verdict{metav1.ConditionUnknown, "Forbidden", "The cluster's credentials may not read kubevirts.kubevirt.io."}, "", nil
	case err != nil:
		return Verdict{metav1.ConditionUnknown, "ProbeFailed", fmt.Sprintf("Reading KubeVirt failed: %v", err)}, "", nil
	}
	kv := list.Items[0].Object
	version, _, _ := unstructured.NestedString(kv, "status", "observedKubeVirtVersion")
	phase, _, _ := unstructured.NestedString(kv, "status", "phase")
	features, _, _ := unstructured.NestedStringSlice(kv, "spec", "configuration", "developerConfiguration", "featureGates")
	slices.Sort(features)
	features = slices.Compact(features)
	if phase != "Deployed" {
		return Verdict{metav1.ConditionFalse, "NotDeployed", fmt.Sprintf("KubeVirt %s is %s, not Deployed.", version, orUnknown(phase))}, version, features
	}
	return Verdict{metav1.ConditionTrue, "Deployed", fmt.Sprintf("KubeVirt %s is deployed.", version)}, version, features
}

// failed classifies a failed request: no connection (refused, timed out, no route, DNS) is
// UNREACHABLE; an answer that is an error (rejected credentials, TLS, 5xx) is UNHEALTHY.
func failed(host string, err error) Finding {
	var netErr net.Error
	var opErr *net.OpError
	var dnsErr *net.DNSError
	switch {
	case errors.As(err, &opErr) || errors.As(err, &dnsErr) || (errors.As(err, &netErr) && netErr.Timeout()):
		return Finding{
			Phase:     platform.ClusterPhaseUnreachable,
			Reachable: Verdict{metav1.ConditionFalse, "Unreachable", fmt.Sprintf("The API server at %s does not answer: %s", host, cause(err))},
			KubeVirt:  Verdict{metav1.ConditionUnknown, "Unreachable", "The cluster does not answer."},
		}
	case apierrors.IsUnauthorized(err) || apierrors.IsForbidden(err):
		return unhealthy("CredentialsRejected", fmt.Sprintf("The API server at %s rejects the kubeconfig's credentials.", host))
	}
	return unhealthy("ProbeFailed", fmt.Sprintf("The API server at %s answered with an error: %s", host, cause(err)))
}

func unhealthy(reason, message string) Finding {
	return Finding{
		Phase:     platform.ClusterPhaseUnhealthy,
		Reachable: Verdict{metav1.ConditionFalse, reason, message},
		KubeVirt:  Verdict{metav1.ConditionUnknown, reason, "The cluster is not healthy."},
	}
}

// cause is the innermost error's text: the URL client-go wraps around it is in the message
// already.
func cause(err error) string {
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		err = urlErr.Err
	}
	return err.Error()
}

func orUnknown(s string) string {
	if s == "" {
		return "in an unknown phase"
	}
	return s
}
