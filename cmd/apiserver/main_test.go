package main

import (
	"runtime/debug"
	"testing"
)

func TestDefaultGC(t *testing.T) {
	previous := debug.SetGCPercent(100)
	defer debug.SetGCPercent(previous)

	if !defaultGC(func(string) (string, bool) { return "", false }) {
		t.Fatal("GOGC unset: the default was not applied")
	}
	if got := debug.SetGCPercent(100); got != gcPercent {
		t.Errorf("GOGC unset: GC percent %d, want %d", got, gcPercent)
	}
	// An operator's GOGC (the runtime has already applied it) wins, even "off" or a value
	// equal to Go's default.
	for _, value := range []string{"100", "off", "50"} {
		if defaultGC(func(key string) (string, bool) { return value, key == "GOGC" }) {
			t.Errorf("GOGC=%s: overridden", value)
		}
		if got := debug.SetGCPercent(100); got != 100 {
			t.Errorf("GOGC=%s: GC percent changed to %d", value, got)
		}
	}
}
