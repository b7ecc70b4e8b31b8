// Package errkind holds the three kinds of error a reconcile can end with, after Flux's
// runtime (stalling, waiting, generic), so every controller says "don't retry" and "come back
// later" the same way and the shared loop (pkg/controllers/loop) acts on it:
//
//   - Stalled: retrying cannot help until someone changes the object or its inputs (a spec the
//     target refuses, a decision already taken). The loop stops retrying the key; the next
//     change to anything the controller watches wakes it again. The status says why.
//   - Waiting: the work is under way elsewhere and will be looked at again after a set time (a
//     VM being deleted, a target applying on its own schedule). The loop requeues the key after
//     that time without counting a failure.
//   - any other error is generic: retried with backoff.
//
// Lower layers (providers, delivery engines) return these kinds too, so a controller needs no
// translation table between its dependencies' sentinels and its own.
package errkind

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

type stalled struct{ err error }

func (e *stalled) Error() string { return e.err.Error() }
func (e *stalled) Unwrap() error { return e.err }

// Stalled marks err as one retrying cannot fix. Stalled(nil) is nil.
func Stalled(err error) error {
	if err == nil {
		return nil
	}
	return &stalled{err: err}
}

// Stalledf formats an error retrying cannot fix.
func Stalledf(format string, args ...any) error { return Stalled(fmt.Errorf(format, args...)) }

// IsStalled says whether err, or an error it wraps, was marked Stalled.
func IsStalled(err error) bool {
	var s *stalled
	return errors.As(err, &s)
}

type waiting struct {
	err   error
	after time.Duration
}

func (e *waiting) Error() string { return e.err.Error() }
func (e *waiting) Unwrap() error { return e.err }

// Waiting marks err as work under way elsewhere, to be looked at again after the given time.
// Waiting(nil, d) is nil.
func Waiting(err error, after time.Duration) error {
	if err == nil {
		return nil
	}
	return &waiting{err: err, after: after}
}

// Waitingf formats a Waiting error.
func Waitingf(after time.Duration, format string, args ...any) error {
	return Waiting(fmt.Errorf(format, args...), after)
}

// IsWaiting says whether err, or an error it wraps, was marked Waiting.
func IsWaiting(err error) bool {
	var w *waiting
	return errors.As(err, &w)
}

// WaitFor is how long a Waiting error asks to wait before the next look, and whether err is one.
func WaitFor(err error) (time.Duration, bool) {
	var w *waiting
	if !errors.As(err, &w) {
		return 0, false
	}
	return w.after, true
}

// Unreachable says whether err means the other side could not be reached or did not answer in
// time — a network, TLS or server-availability failure — rather than an answer that refused
// the request. It reads the error's types, never its text.
func Unreachable(err error) bool {
	if err == nil {
		return false
	}
	if apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err) || apierrors.IsServiceUnavailable(err) || apierrors.IsTooManyRequests(err) {
		return true
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		// Any other answer from an API server reached it.
		return false
	}
	var (
		netErr    net.Error
		opErr     *net.OpError
		dnsErr    *net.DNSError
		recordErr tls.RecordHeaderError
		authority x509.UnknownAuthorityError
		hostname  x509.HostnameError
		invalid   x509.CertificateInvalidError
	)
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EHOSTUNREACH),
		errors.Is(err, syscall.ENETUNREACH), errors.Is(err, syscall.ETIMEDOUT), errors.Is(err, net.ErrClosed):
		return true
	case errors.As(err, &opErr), errors.As(err, &dnsErr), errors.As(err, &recordErr),
		errors.As(err, &authority), errors.As(err, &hostname), errors.As(err, &invalid):
		// A failed dial, lookup or handshake: the endpoint is not one we can talk to.
		return true
	case errors.As(err, &netErr) && netErr.Timeout():
		return true
	}
	return false
}
