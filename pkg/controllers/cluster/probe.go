package cluster

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	platform "github.com/plinth-dev/plinth/pkg/apis/platform/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/governance/vmprovider"
)

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

// Probe asks the cluster for its version and readiness, then detect for KubeVirt's version and
// feature gates. Every request has timeout: an unreachable cluster costs one timeout, not a
// stuck worker.
func Probe(timeout time.Duration, detect Detector) Prober {
	return func(ctx context.Context, cfg *rest.Config) Finding {
		cfg = rest.CopyConfig(cfg)
		cfg.Timeout = timeout
		kube, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return unhealthy(platform.ReasonProbeFailed, fmt.Sprintf("No client for the cluster: %v", err))
		}
		version, err := kube.Discovery().ServerVersion()
		if err != nil {
			return failed(cfg.Host, err)
		}
		if err := kube.Discovery().RESTClient().Get().AbsPath("/readyz").Do(ctx).Error(); err != nil {
			f := failed(cfg.Host, err)
			if f.Phase == platform.ClusterPhaseUnhealthy {
				f.Reachable.Reason, f.Reachable.Message = platform.ReasonNotReady, fmt.Sprintf("The API server at %s answers but is not ready.", cfg.Host)
			}
			return f
		}
		f := Finding{
			Phase:             platform.ClusterPhaseHealthy,
			KubernetesVersion: version.GitVersion,
			Reachable:         Verdict{metav1.ConditionTrue, platform.ReasonReady, fmt.Sprintf("The API server at %s is ready.", cfg.Host)},
		}
		f.KubeVirt, f.KubevirtVersion, f.EnabledFeatures = virtualization(detect(ctx, cfg))
		return f
	}
}

// Detector reads what a cluster's virtualization layer offers (the KubeVirt provider's
// DetectFromConfig); it returns an error wrapping vmprovider.ErrNotFound when there is none.
type Detector func(ctx context.Context, cfg *rest.Config) (*vmprovider.Capabilities, error)

// virtualization turns a detection into the KubeVirtAvailable condition, version and features.
func virtualization(caps *vmprovider.Capabilities, err error) (Verdict, string, []string) {
	switch {
	case errors.Is(err, vmprovider.ErrNotFound):
		return Verdict{metav1.ConditionFalse, platform.ReasonNotInstalled, "KubeVirt is not installed on the cluster."}, "", nil
	case apierrors.IsForbidden(err):
		return Verdict{metav1.ConditionUnknown, platform.ReasonForbidden, "The cluster's credentials may not read kubevirts.kubevirt.io."}, "", nil
	case err != nil:
		return Verdict{metav1.ConditionUnknown, platform.ReasonProbeFailed, fmt.Sprintf("Reading KubeVirt failed: %v", cause(err))}, "", nil
	case !caps.Deployed:
		return Verdict{metav1.ConditionFalse, platform.ReasonNotDeployed, fmt.Sprintf("KubeVirt %s is %s, not Deployed.", caps.Version, cmp.Or(caps.Phase, "in an unknown phase"))}, caps.Version, caps.Features
	}
	return Verdict{metav1.ConditionTrue, platform.ReasonDeployed, fmt.Sprintf("KubeVirt %s is deployed.", caps.Version)}, caps.Version, caps.Features
}

// failed classifies a failed request: no connection (refused, timed out, no route, DNS) is
// UNREACHABLE; an answer that is an error (rejected credentials, TLS, 5xx) is UNHEALTHY. It
// reads the error's types, as errkind.Unreachable does, but draws the line elsewhere: for a
// phase, a 503 or a certificate the kubeconfig does not trust is an answer from the cluster,
// where errkind.Unreachable counts it as a failure that may pass by itself.
func failed(host string, err error) Finding {
	var netErr net.Error
	var opErr *net.OpError
	var dnsErr *net.DNSError
	switch {
	case errors.As(err, &opErr) || errors.As(err, &dnsErr) || (errors.As(err, &netErr) && netErr.Timeout()):
		return Finding{
			Phase:     platform.ClusterPhaseUnreachable,
			Reachable: Verdict{metav1.ConditionFalse, platform.ReasonUnreachable, fmt.Sprintf("The API server at %s does not answer: %s", host, cause(err))},
			KubeVirt:  Verdict{metav1.ConditionUnknown, platform.ReasonUnreachable, "The cluster does not answer."},
		}
	case apierrors.IsUnauthorized(err) || apierrors.IsForbidden(err):
		return unhealthy(platform.ReasonCredentialsRejected, fmt.Sprintf("The API server at %s rejects the kubeconfig's credentials.", host))
	}
	return unhealthy(platform.ReasonProbeFailed, fmt.Sprintf("The API server at %s answered with an error: %s", host, cause(err)))
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
