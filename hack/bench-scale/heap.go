package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"k8s.io/client-go/rest"
)

// liveHeap is a server's live heap in bytes: a heap profile asked with gc=1 runs a garbage
// collection first, after which the heap's allocated bytes are what the server holds, without
// the garbage that its resident memory still counts.
func liveHeap(ctx context.Context, c rest.Interface) (int64, error) {
	if _, err := c.Get().AbsPath("/debug/pprof/heap").Param("gc", "1").DoRaw(ctx); err != nil {
		return 0, fmt.Errorf("heap profile: %w", err)
	}
	metrics, err := c.Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return 0, fmt.Errorf("metrics: %w", err)
	}
	v, err := gauge(string(metrics), "go_memstats_heap_alloc_bytes")
	return int64(v), err
}

// gauge is the value of a metric without labels in Prometheus' text format.
func gauge(text, name string) (float64, error) {
	for _, line := range strings.Split(text, "\n") {
		rest, ok := strings.CutPrefix(line, name+" ")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			return 0, fmt.Errorf("%s has no value", name)
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", name, err)
		}
		return v, nil
	}
	return 0, fmt.Errorf("no %s among the metrics", name)
}
