package errkind

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestKindsSurviveWrapping(t *testing.T) {
	base := errors.New("the target refused the spec")
	s := fmt.Errorf("delivering: %w", Stalled(base))
	if !IsStalled(s) || IsWaiting(s) || !errors.Is(s, base) {
		t.Errorf("wrapped Stalled: IsStalled=%v IsWaiting=%v Is(base)=%v", IsStalled(s), IsWaiting(s), errors.Is(s, base))
	}
	w := fmt.Errorf("deleting: %w", Waiting(base, 7*time.Second))
	if d, ok := WaitFor(w); !ok || d != 7*time.Second || IsStalled(w) {
		t.Errorf("wrapped Waiting: WaitFor=%v,%v IsStalled=%v", d, ok, IsStalled(w))
	}
	if IsStalled(base) || IsWaiting(base) {
		t.Error("a plain error is generic")
	}
	if Stalled(nil) != nil || Waiting(nil, time.Second) != nil {
		t.Error("marking nil must stay nil")
	}
	if got := Stalledf("field %s is wrong", "spec.x").Error(); got != "field spec.x is wrong" {
		t.Errorf("Stalledf message %q", got)
	}
}

func TestUnreachableReadsTypesNotText(t *testing.T) {
	gr := schema.GroupResource{Resource: "things"}
	// A real refused dial, as client-go would see it.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	_, dialErr := (&http.Client{Timeout: 2 * time.Second}).Get("http://" + addr)
	if dialErr == nil {
		t.Fatal("dial of a closed port succeeded")
	}
	for _, tc := range []struct {
		what string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"refused dial", dialErr, true},
		{"url error around ECONNREFUSED", &url.Error{Op: "Get", URL: "https://x", Err: syscall.ECONNREFUSED}, true},
		{"EOF", fmt.Errorf("reading: %w", io.EOF), true},
		{"deadline", context.DeadlineExceeded, true},
		{"dns", &net.DNSError{Err: "no such host", Name: "x"}, true},
		{"server timeout", apierrors.NewServerTimeout(gr, "get", 1), true},
		{"service unavailable", apierrors.NewServiceUnavailable("down"), true},
		{"not found is an answer", apierrors.NewNotFound(gr, "x"), false},
		{"forbidden is an answer", apierrors.NewForbidden(gr, "x", errors.New("no")), false},
		// The old text matching called these unreachable.
		{"message mentioning EOF", errors.New("value ends in EOF"), false},
		{"message mentioning unreachable", errors.New("field spec.unreachable is wrong"), false},
		{"invalid with dial in the text", apierrors.NewBadRequest("dial tcp is not a valid field"), false},
	} {
		if got := Unreachable(tc.err); got != tc.want {
			t.Errorf("%s: Unreachable(%v) = %v, want %v", tc.what, tc.err, got, tc.want)
		}
	}
}
