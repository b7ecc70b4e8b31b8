package ociartifact

import (
	"context"
	"errors"
	"sync"
	"time"

	gitopsv1alpha1 "github.com/plinth-dev/plinth/pkg/apis/gitops/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/errkind"
	"github.com/plinth-dev/plinth/pkg/gitops/delivery"
)

// fakeEngine records what it is asked and answers what the test set: Ready with the artifact's
// revision when ready, the reconcile request handled, Flux's object names when flux.
type fakeEngine struct {
	mu    sync.Mutex
	name  string
	flux  bool
	ready bool
	// timeout is the time the last Deliver was given.
	timeout time.Duration
	// stalled makes a delivery not Ready report a Waiting error for the target's interval, as
	// Flux failing and retrying by itself.
	stalled   bool
	err       error
	removeErr error
	delivered []delivery.Artifact
	targets   []delivery.Target
	removed   []*gitopsv1alpha1.ArtifactTargetStatus
	// removeTargets and removeOpts are what each Remove was given, in order.
	removeTargets []delivery.Target
	removeOpts    []delivery.RemoveOptions
}

func (f *fakeEngine) Deliver(ctx context.Context, art delivery.Artifact, target delivery.Target) (gitopsv1alpha1.ArtifactTargetStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if deadline, ok := ctx.Deadline(); ok {
		f.timeout = time.Until(deadline)
	}
	f.delivered = append(f.delivered, art)
	f.targets = append(f.targets, target)
	st := gitopsv1alpha1.ArtifactTargetStatus{Cluster: target.Cluster.Name, Engine: f.name, Message: "Not applied yet."}
	if target.Previous != nil {
		st.Revision, st.LastHandledReconcileAt = target.Previous.Revision, target.Previous.LastHandledReconcileAt
	}
	if target.ReconcileRequest != "" {
		st.LastHandledReconcileAt = target.ReconcileRequest
	}
	if f.flux {
		st.OCIRepository, st.Kustomization = "flux-system/team-a-app", "flux-system/team-a-app"
	}
	if f.err != nil {
		st.Message = f.err.Error()
		return st, f.err
	}
	if f.ready {
		st.Ready, st.Revision, st.Message = true, art.Revision(), "Applied."
		return st, nil
	}
	if f.stalled {
		st.Message = "Kustomization flux-system/team-a-app is not ready (ReconciliationFailed): dry-run failed."
		return st, errkind.Waiting(errors.New(st.Message), target.Interval())
	}
	return st, nil
}

func (f *fakeEngine) Remove(_ context.Context, _, _ string, target delivery.Target, last *gitopsv1alpha1.ArtifactTargetStatus, opts delivery.RemoveOptions) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.removed = append(f.removed, last)
	f.removeTargets = append(f.removeTargets, target)
	f.removeOpts = append(f.removeOpts, opts)
	return f.removeErr
}

// took returns the artifacts delivered since the last call and forgets them.
func (f *fakeEngine) took() []delivery.Artifact {
	f.mu.Lock()
	defer f.mu.Unlock()
	d := f.delivered
	f.delivered = nil
	return d
}

func (f *fakeEngine) lastTarget() delivery.Target {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.targets[len(f.targets)-1]
}
