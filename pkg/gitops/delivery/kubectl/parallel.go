package kubectl

import "sync"

// workers is how many requests one delivery has in flight at most: the objects of one rank
// (see rank) are applied, and the objects of the version read back, by this many goroutines.
// Applying 200 objects one after another takes 200 round trips of a few milliseconds each,
// where Helm's install creates the objects of each kind concurrently; 16 brings a delivery to
// about Helm's time while one delivery stays far below kube-apiserver's default of 200
// mutating requests in flight (--max-mutating-requests-inflight), which API Priority and
// Fairness shares among all clients anyway.
const workers = 16

// forEach calls do(i) for every i in [0, n) on up to workers goroutines, handing the indices out
// in ascending order, and returns once every call it started returned. Once a call fails it
// hands out no more: calls already running finish, the rest are never made. It returns the
// lowest index whose call failed and that call's error, or -1 and nil. With one worker it is a
// loop that stops at the first error.
//
// do must write only what belongs to its index: calls run at the same time.
func forEach(n, workers int, do func(i int) error) (int, error) {
	var (
		mu     sync.Mutex
		next   int
		failed = -1
		first  error
	)
	// take hands out the next index, or none once a call failed or all are handed out.
	take := func() (int, bool) {
		mu.Lock()
		defer mu.Unlock()
		if failed >= 0 || next >= n {
			return 0, false
		}
		next++
		return next - 1, true
	}
	fail := func(i int, err error) {
		mu.Lock()
		defer mu.Unlock()
		if failed < 0 || i < failed {
			failed, first = i, err
		}
	}
	var wg sync.WaitGroup
	for range max(1, min(workers, n)) {
		wg.Go(func() {
			for i, ok := take(); ok; i, ok = take() {
				if err := do(i); err != nil {
					fail(i, err)
				}
			}
		})
	}
	wg.Wait()
	return failed, first
}
