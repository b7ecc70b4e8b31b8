package main

import (
	"math"
	"sort"
	"sync"
	"time"
)

// Result is one operation's figures in one round, or (after median) across rounds.
type Result struct {
	// Throughput is operations (for lists: objects) per second.
	Throughput float64 `json:"throughputPerSecond"`
	// P50 and P99 are request latencies in milliseconds.
	P50 float64 `json:"p50Milliseconds"`
	P99 float64 `json:"p99Milliseconds"`
	// Note says why there is no figure (for example an encoding the server does not offer).
	Note string `json:"note,omitempty"`
}

// latencies collects request durations from concurrent workers.
type latencies struct {
	mu sync.Mutex
	d  []time.Duration
}

func (l *latencies) add(d time.Duration) {
	l.mu.Lock()
	l.d = append(l.d, d)
	l.mu.Unlock()
}

// result summarizes count operations done in wall time.
func (l *latencies) result(count int, wall time.Duration) Result {
	l.mu.Lock()
	defer l.mu.Unlock()
	sort.Slice(l.d, func(i, j int) bool { return l.d[i] < l.d[j] })
	return Result{Throughput: float64(count) / wall.Seconds(), P50: ms(percentile(l.d, 0.50)), P99: ms(percentile(l.d, 0.99))}
}

func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	// Nearest rank: the smallest value with at least p of the samples at or below it.
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	if i < 0 {
		i = 0
	}
	return sorted[i]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// median takes each figure's median across rounds; a figure with a note in any round keeps
// the note.
func median(rounds []Result) Result {
	var out Result
	for _, r := range rounds {
		if r.Note != "" {
			return Result{Note: r.Note}
		}
	}
	pick := func(get func(Result) float64) float64 {
		values := make([]float64, 0, len(rounds))
		for _, r := range rounds {
			values = append(values, get(r))
		}
		sort.Float64s(values)
		if len(values) == 0 {
			return 0
		}
		if len(values)%2 == 1 {
			return values[len(values)/2]
		}
		return (values[len(values)/2-1] + values[len(values)/2]) / 2
	}
	out.Throughput = pick(func(r Result) float64 { return r.Throughput })
	out.P50 = pick(func(r Result) float64 { return r.P50 })
	out.P99 = pick(func(r Result) float64 { return r.P99 })
	return out
}

// parallel runs do(i) for i in [0, n) on workers goroutines, timing each call, and returns
// the first error.
func parallel(n, workers int, lat *latencies, do func(i int) error) (time.Duration, error) {
	next := make(chan int, n)
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	var wg sync.WaitGroup
	var once sync.Once
	var firstErr error
	start := time.Now()
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				t := time.Now()
				if err := do(i); err != nil {
					once.Do(func() { firstErr = err })
					return
				}
				lat.add(time.Since(t))
			}
		}()
	}
	wg.Wait()
	return time.Since(start), firstErr
}
