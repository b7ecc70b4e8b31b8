package benchharness

import (
	"context"
	"sync"
)

// Parallel calls do for every index in [0, n) from the given number of clients, client k
// taking k, k+clients, ... in order, as the benchmarks' clients do. The first error cancels
// the context the others get, stops every client before its next index and is returned.
func Parallel(ctx context.Context, n, clients int, do func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	for k := 0; k < clients; k++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := k; i < n && ctx.Err() == nil; i += clients {
				if err := do(ctx, i); err != nil {
					cancel(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	return context.Cause(ctx)
}
