// Command pause is a pod sandbox's process: the container runtime starts it first in each pod
// (the local platform's real node, internal/localplatform, packs it into the node's pause image
// with internal/ociimage), it holds the pod's namespaces while the pod's containers come and
// go, and, as PID 1 of the pod's PID namespace when the pod shares one, it adopts every
// orphaned process of the pod and must reap it, or the pod fills with zombies.
//
// It does nothing else: it waits for signals, reaps on SIGCHLD and exits 0 on SIGTERM or
// SIGINT, which is how the runtime stops a sandbox.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	// Two channels, so a pending SIGCHLD can never crowd out a SIGTERM: signal.Notify drops
	// what does not fit. One slot for SIGCHLD is enough, since each reap takes every child
	// that has exited, however many SIGCHLDs that took.
	child := make(chan os.Signal, 1)
	stop := make(chan os.Signal, 1)
	signal.Notify(child, syscall.SIGCHLD)
	// PID 1 of a namespace gets no signal it has no handler for: without Notify, SIGTERM would
	// not stop it. SIGINT is enabled last, so a handler for it tells TestPause that the others
	// are in place.
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	reap()
	for {
		// Blocking on the channels parks the process until a signal comes: no polling.
		select {
		case <-child:
			reap()
		case <-stop:
			os.Exit(0)
		}
	}
}

// reap waits for every child that has exited, without blocking for one that has not: signals
// coalesce, so one SIGCHLD may stand for many exits. The first call takes children that exited
// before SIGCHLD was caught.
func reap() {
	for {
		var status syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil || pid <= 0 {
			// ECHILD: no children at all; 0: none has exited yet.
			return
		}
	}
}
