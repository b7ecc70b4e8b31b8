package main

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// kubectl runs the real kubectl binary as the admin, with a discovery cache of its own that
// the warm-up fills, as a user's is after a first command.
type kubectl struct {
	path, kubeconfig, cacheDir string
}

// command is kubectl with the benchmark's kubeconfig and cache and args.
func (k kubectl) command(ctx context.Context, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, k.path, append([]string{"--kubeconfig", k.kubeconfig, "--cache-dir", k.cacheDir}, args...)...)
}

// run runs kubectl and fails with its output when it fails.
func (k kubectl) run(ctx context.Context, args ...string) error {
	if out, err := k.command(ctx, args...).CombinedOutput(); err != nil {
		return fmt.Errorf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

// get times `kubectl get resource` in a namespace, or in all namespaces when ns is empty, from
// the process's start to its exit, and returns the rows it printed.
func (k kubectl) get(ctx context.Context, resource, ns string) (int, time.Duration, error) {
	args := []string{"get", resource, "-A"}
	if ns != "" {
		args = []string{"get", resource, "-n", ns}
	}
	cmd := k.command(ctx, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	d := time.Since(start)
	if err != nil {
		return 0, 0, fmt.Errorf("kubectl %s: %v\n%s", strings.Join(args, " "), err, truncate(stderr.String(), 500))
	}
	rows, err := tableRows(stdout.String())
	if err != nil {
		return 0, 0, fmt.Errorf("kubectl %s: %w", strings.Join(args, " "), err)
	}
	return rows, d, nil
}

// tableRows counts the rows of kubectl get's table: its lines after the header. kubectl
// prints nothing on stdout when there is nothing to list; output that does not start with a
// NAME or NAMESPACE column is not a table.
func tableRows(out string) (int, error) {
	out = strings.TrimRight(out, "\n")
	if out == "" {
		return 0, nil
	}
	lines := strings.Split(out, "\n")
	if !strings.HasPrefix(lines[0], "NAME") {
		return 0, fmt.Errorf("the output is not a table: %q", truncate(lines[0], 80))
	}
	return len(lines) - 1, nil
}
