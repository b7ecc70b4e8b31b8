package localplatform

import (
	"fmt"
	"net"
)

// PortInUseError reports a configured port that another process holds.
type PortInUseError struct {
	Port int
	Err  error
}

func (e *PortInUseError) Error() string {
	return fmt.Sprintf("port %d is in use (is another platform still running?): %v", e.Port, e.Err)
}

func portFree(port int) error {
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return &PortInUseError{Port: port, Err: err}
	}
	return l.Close()
}

// FreePorts asks the kernel for n distinct free loopback ports, holding each until all are
// chosen so none is handed out twice. A port in except is held too and never returned: the
// platform passes the ports it was configured with, which are free until their components
// bind them, so a port chosen now for one component cannot be taken later by another.
func FreePorts(n int, except ...int) ([]int, error) {
	return freePorts(n, except, func() (net.Listener, error) { return net.Listen("tcp", "127.0.0.1:0") })
}

// freePorts is FreePorts with the source of listeners given; unit tests pass one that
// answers with chosen ports.
func freePorts(n int, except []int, listen func() (net.Listener, error)) ([]int, error) {
	excluded := make(map[int]bool, len(except))
	for _, port := range except {
		excluded[port] = true
	}
	var ports []int
	var listeners []net.Listener
	defer func() {
		for _, l := range listeners {
			l.Close()
		}
	}()
	// Each excluded port handed out stays held, so the kernel moves on; a bound on the
	// attempts keeps a misbehaving source from looping.
	for attempts := 0; len(ports) < n; attempts++ {
		if attempts >= n+len(except)+16 {
			return nil, fmt.Errorf("no %d free loopback ports outside %v", n, except)
		}
		l, err := listen()
		if err != nil {
			return nil, err
		}
		listeners = append(listeners, l)
		if port := l.Addr().(*net.TCPAddr).Port; !excluded[port] {
			ports = append(ports, port)
		}
	}
	return ports, nil
}
