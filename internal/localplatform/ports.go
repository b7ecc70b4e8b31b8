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
// chosen so none is handed out twice.
func FreePorts(n int) ([]int, error) {
	var ports []int
	var listeners []net.Listener
	defer func() {
		for _, l := range listeners {
			l.Close()
		}
	}()
	for len(ports) < n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		listeners = append(listeners, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
