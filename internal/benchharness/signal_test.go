package benchharness

import (
	"syscall"
	"testing"
	"time"
)

func TestContextEndsAtSIGTERM(t *testing.T) {
	ctx, cancel := Context(time.Minute)
	defer cancel()
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the context did not end at SIGTERM")
	}
}

func TestContextEndsAfterTheTimeout(t *testing.T) {
	ctx, cancel := Context(10 * time.Millisecond)
	defer cancel()
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the context did not end after its timeout")
	}
}
