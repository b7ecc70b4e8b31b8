package benchharness

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// Context is a benchmark's context: done after timeout, or at SIGINT or SIGTERM, so that an
// interrupted benchmark still returns through its deferred platform stop instead of leaving
// etcd, the API servers and the controllers running.
func Context(timeout time.Duration) (context.Context, context.CancelFunc) {
	ctx, stopSignals := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	return ctx, func() { cancel(); stopSignals() }
}
