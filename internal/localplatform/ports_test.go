package localplatform

import (
	"errors"
	"net"
	"slices"
	"testing"
)

// fakeListener is a listener that only names its port.
type fakeListener struct {
	port   int
	closed *int
}

func (l fakeListener) Accept() (net.Conn, error) { return nil, errors.New("not a real listener") }
func (l fakeListener) Close() error              { *l.closed++; return nil }
func (l fakeListener) Addr() net.Addr            { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: l.port} }

// listenSequence hands out listeners on the given ports in order, as the kernel might.
func listenSequence(ports []int, closed *int) func() (net.Listener, error) {
	return func() (net.Listener, error) {
		if len(ports) == 0 {
			return nil, errors.New("no more ports")
		}
		port := ports[0]
		ports = ports[1:]
		return fakeListener{port: port, closed: closed}, nil
	}
}

// A port the platform was configured with is free until its component binds it, perhaps late
// in the start; the kernel may hand it out then. The CI run of 11-24 lost its platform this
// way: Flux's kustomize-controller was given kwok's port for its health endpoint, kwok bound it
// first, and kustomize-controller died at every start while kwok answered its readiness check.
func TestFreePortsSkipsConfiguredPorts(t *testing.T) {
	var closed int
	ports, err := freePorts(3, []int{40001, 40003}, listenSequence([]int{40001, 40002, 40003, 40004, 40005}, &closed))
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{40002, 40004, 40005}; !slices.Equal(ports, want) {
		t.Errorf("ports %v, want %v", ports, want)
	}
	// Every listener is released, the excluded ones included, once the ports are chosen.
	if closed != 5 {
		t.Errorf("%d listeners closed, want 5", closed)
	}
}

func TestFreePortsGivesUpOnASourceOfExcludedPorts(t *testing.T) {
	var closed int
	source := make([]int, 100)
	for i := range source {
		source[i] = 40001
	}
	if ports, err := freePorts(2, []int{40001}, listenSequence(source, &closed)); err == nil {
		t.Errorf("ports %v from a source that only hands out an excluded port", ports)
	}
	if closed == 0 {
		t.Error("the listeners taken were not released")
	}
}

// The real kernel: distinct ports, none of the excluded ones.
func TestFreePortsFromTheKernel(t *testing.T) {
	first, err := FreePorts(20)
	if err != nil {
		t.Fatal(err)
	}
	second, err := FreePorts(20, first...)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, port := range second {
		if seen[port] || slices.Contains(first, port) {
			t.Errorf("port %d handed out twice or excluded: first %v, second %v", port, first, second)
		}
		seen[port] = true
	}
}
