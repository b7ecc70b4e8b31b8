package localplatform

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/plinth-dev/plinth/internal/localplatform/supervisor"
)

// pollInterval is how often a readiness check runs while the platform waits.
const pollInterval = 250 * time.Millisecond

// waitFor runs check until it passes, the component it waits on (if any) has died — its log
// says why, waiting longer would not help — or timeout passes. what names the wait in errors.
func waitFor(ctx context.Context, what string, timeout time.Duration, component *supervisor.Process, check func(context.Context) error) error {
	var last, died error
	err := wait.PollUntilContextTimeout(ctx, pollInterval, timeout, true, func(ctx context.Context) (bool, error) {
		if died = component.Died(); died != nil {
			return false, died
		}
		last = check(ctx)
		return last == nil, nil
	})
	switch {
	case err == nil, died != nil, ctx.Err() != nil: // done, crashed (with its log), or given up
		return err
	case last != nil:
		err = fmt.Errorf("%s: not ready after %s: %w", what, timeout, last)
	default:
		err = fmt.Errorf("%s: not ready after %s", what, timeout)
	}
	if component != nil {
		err = fmt.Errorf("%w (log: %s)", err, component.LogPath())
	}
	return err
}

// listening is a check that passes once something accepts connections on addr.
func listening(addr string) func(context.Context) error {
	return func(ctx context.Context) error {
		dialer := net.Dialer{Timeout: time.Second}
		conn, err := dialer.DialContext(ctx, "tcp", addr)
		if err != nil {
			return err
		}
		return conn.Close()
	}
}

// kubeReady passes once kube-apiserver reports itself ready.
func (p *Platform) kubeReady(ctx context.Context) error {
	return p.admin.Discovery().RESTClient().Get().AbsPath("/readyz").Do(ctx).Error()
}

// plinthReady passes once every group version plinth-apiserver serves answers through
// kube-apiserver. The aggregator proxies only to an APIService it has found Available, so
// this is what a kubectl user needs, not merely plinth-apiserver listening.
func (p *Platform) plinthReady(ctx context.Context) error {
	for _, apiService := range APIServices {
		version, group, _ := strings.Cut(apiService, ".")
		if err := p.admin.Discovery().RESTClient().Get().AbsPath("/apis", group, version).Do(ctx).Error(); err != nil {
			return fmt.Errorf("APIService %s: %w", apiService, err)
		}
	}
	return nil
}

// openAPIServed passes once kube-apiserver serves the OpenAPI of every path.
func (p *Platform) openAPIServed(paths ...string) func(context.Context) error {
	return func(ctx context.Context) error {
		for _, path := range paths {
			if err := p.admin.Discovery().RESTClient().Get().AbsPath(path).Do(ctx).Error(); err != nil {
				return err
			}
		}
		return nil
	}
}

// rolesAggregated passes once the controller manager has folded plinth's roles into the
// built-in edit role: only then can tenants work.
func (p *Platform) rolesAggregated(ctx context.Context) error {
	edit, err := p.admin.RbacV1().ClusterRoles().Get(ctx, "edit", metav1.GetOptions{})
	if err != nil {
		return err
	}
	for _, rule := range edit.Rules {
		for _, group := range rule.APIGroups {
			if group == "score.dev" {
				return nil
			}
		}
	}
	return fmt.Errorf("the edit role does not include score.dev yet")
}

// httpOK is a check that passes once url answers 200.
func httpOK(ctx context.Context, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s answered %s", url, resp.Status)
	}
	return nil
}
