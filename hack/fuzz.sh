#!/usr/bin/env bash
# Runs every go test -fuzz target of the module for FUZZTIME each, one after the other (go test
# fuzzes one target per invocation), and prints one line per target: executions, the corpus it
# grew to and the result. New interesting inputs stay in Go's fuzz cache; a failing input is
# written to the package's testdata/fuzz/<target>/, where plain go test (and so make test) runs
# it from then on.
#   FUZZTIME=30s hack/fuzz.sh [package pattern...]
set -euo pipefail
cd "$(dirname "$0")/.."

FUZZTIME=${FUZZTIME:-30s}
GO=${GO:-go}
# One worker per target by default: the machine is shared; raise it on a dedicated one.
FUZZPARALLEL=${FUZZPARALLEL:-1}
patterns=("$@")
[ ${#patterns[@]} -gt 0 ] || patterns=(./pkg/... ./internal/...)

log=$(mktemp)
trap 'rm -f "$log"' EXIT
failed=0
printf '%-28s %-44s %12s %8s %s\n' TARGET PACKAGE EXECS CORPUS RESULT
for pkg in $("$GO" list -f '{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}}{{end}}' "${patterns[@]}"); do
	dir=$("$GO" list -f '{{.Dir}}' "$pkg")
	targets=$(cd "$dir" && grep -ho '^func Fuzz[A-Za-z0-9_]*(f \*testing\.F)' -- *_test.go 2>/dev/null | sed 's/^func \(Fuzz[A-Za-z0-9_]*\).*/\1/' || true)
	for target in $targets; do
		result=ok
		if ! (cd "$dir" && "$GO" test -run '^$' -fuzz "^${target}\$" -fuzztime "$FUZZTIME" -parallel "$FUZZPARALLEL" .) >"$log" 2>&1; then
			result=FAIL
			failed=1
		fi
		# The last progress line: "fuzz: elapsed: 30s, execs: 123456 (4115/sec), new interesting: 12 (total: 57)".
		progress=$(grep '^fuzz: elapsed' "$log" | tail -1 || true)
		execs=$(sed -n 's/.*execs: \([0-9]*\).*/\1/p' <<<"$progress")
		corpus=$(sed -n 's/.*(total: \([0-9]*\)).*/\1/p' <<<"$progress")
		printf '%-28s %-44s %12s %8s %s\n' "$target" "${pkg#github.com/plinth-dev/plinth/}" "${execs:--}" "${corpus:--}" "$result"
		if [ "$result" = FAIL ]; then
			sed 's/^/    /' "$log" | tail -40
		fi
	done
done
exit $failed
