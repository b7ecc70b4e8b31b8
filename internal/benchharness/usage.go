package benchharness

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Usage is what a process has used so far.
type Usage struct {
	// CPUSeconds is its user and system CPU time.
	CPUSeconds float64
	// PeakRSSKiB is its peak resident memory (VmHWM).
	PeakRSSKiB int
	// RSSKiB is its resident memory now (VmRSS): what it holds, where the peak may be a moment
	// long gone.
	RSSKiB int
}

// PeakRSSMiB is the peak resident memory in MiB.
func (u Usage) PeakRSSMiB() float64 { return float64(u.PeakRSSKiB) / 1024 }

// ReadUsage reads a process's usage from /proc.
func ReadUsage(pid int) (Usage, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return Usage{}, err
	}
	cpu, err := parseCPUSeconds(string(stat))
	if err != nil {
		return Usage{}, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return Usage{}, err
	}
	peak, err := parseStatusKiB(string(status), "VmHWM")
	if err != nil {
		return Usage{}, fmt.Errorf("/proc/%d/status: %w", pid, err)
	}
	rss, err := parseStatusKiB(string(status), "VmRSS")
	if err != nil {
		return Usage{}, fmt.Errorf("/proc/%d/status: %w", pid, err)
	}
	return Usage{CPUSeconds: cpu, PeakRSSKiB: peak, RSSKiB: rss}, nil
}

// userHZ is the unit of /proc's CPU times: 100 on every Linux this runs on.
const userHZ = 100

// parseCPUSeconds is utime+stime of a /proc/PID/stat line. The fields are counted after the
// command name, which is in parentheses and may itself contain spaces and parentheses.
func parseCPUSeconds(stat string) (float64, error) {
	end := strings.LastIndex(stat, ")")
	if end < 0 || end+2 > len(stat) {
		return 0, fmt.Errorf("no command name")
	}
	fields := strings.Fields(stat[end+2:])
	if len(fields) < 13 {
		return 0, fmt.Errorf("%d fields after the command name, want at least 13", len(fields))
	}
	utime, err := strconv.ParseUint(fields[11], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("utime: %w", err)
	}
	stime, err := strconv.ParseUint(fields[12], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("stime: %w", err)
	}
	return float64(utime+stime) / userHZ, nil
}

// parseStatusKiB is a memory line of /proc/PID/status (VmHWM, VmRSS), in KiB.
func parseStatusKiB(status, field string) (int, error) {
	for _, line := range strings.Split(status, "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			fields := strings.Fields(rest)
			if len(fields) == 0 {
				return 0, fmt.Errorf("empty %s", field)
			}
			return strconv.Atoi(fields[0])
		}
	}
	return 0, fmt.Errorf("no %s", field)
}

// ProcessCPU is the CPU time so far of this process and of its children (the local platform's
// components, which it started), in seconds by command name; this process is "self". Read
// twice, the difference is where a stretch of a benchmark spent the machine's CPU.
func ProcessCPU() (Counts, error) {
	self := os.Getpid()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	out := Counts{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue // gone meanwhile
		}
		name, ppid, cpu, err := parseStat(string(stat))
		if err != nil {
			return nil, fmt.Errorf("/proc/%d/stat: %w", pid, err)
		}
		switch {
		case pid == self:
			out["self"] += cpu
		case ppid == self:
			out[name] += cpu
		}
	}
	return out, nil
}

// parseStat is the command name, parent pid and CPU seconds of a /proc/PID/stat line.
func parseStat(stat string) (name string, ppid int, cpu float64, err error) {
	open, end := strings.Index(stat, "("), strings.LastIndex(stat, ")")
	if open < 0 || end < open {
		return "", 0, 0, fmt.Errorf("no command name")
	}
	if cpu, err = parseCPUSeconds(stat); err != nil {
		return "", 0, 0, err
	}
	fields := strings.Fields(stat[end+2:])
	if ppid, err = strconv.Atoi(fields[1]); err != nil {
		return "", 0, 0, fmt.Errorf("ppid: %w", err)
	}
	return stat[open+1 : end], ppid, cpu, nil
}
