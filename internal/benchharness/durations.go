package benchharness

import (
	"fmt"
	"sort"
	"time"
)

// Durations are measured durations (latencies), in no particular order.
type Durations []time.Duration

// Quantile is the q-th quantile by nearest rank: 0.5 the median, 1 the slowest; zero when
// there are none. q outside (0, 1] is clamped to it.
func (d Durations) Quantile(q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	sorted := append(Durations(nil), d...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	rank := int(q*float64(len(sorted))+0.999999) - 1
	return sorted[min(max(rank, 0), len(sorted)-1)]
}

// String is "n=…, median …, p99 …, max …", rounded to the millisecond.
func (d Durations) String() string {
	r := func(q float64) time.Duration { return d.Quantile(q).Round(time.Millisecond) }
	return fmt.Sprintf("n=%d, median %s, p99 %s, max %s", len(d), r(0.5), r(0.99), r(1))
}
