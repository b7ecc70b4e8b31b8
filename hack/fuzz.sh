#!/usr/bin/env bash
# Runs every go test -fuzz target of the module for FUZZTIME each, one after the other (go test
# fuzzes one target per invocation), and prints one line per target: executions, the corpus it
# grew to (NEW interesting inputs found in this run, CORPUS with the seeds) and the result. New
# interesting inputs stay in Go's fuzz cache; a failing input is written to the package's
# testdata/fuzz/<target>/, where plain go test (and so make test) runs it from then on.
#   FUZZTIME=30s hack/fuzz.sh [package pattern...]
set -euo pipefail
cd "$(dirname "$0")/.."

FUZZTIME=${FUZZTIME:-30s}
GO=${GO:-go}
# One worker per target by default: the machine is shared; raise it on a dedicated one.
FUZZPARALLEL=${FUZZPARALLEL:-1}
# Go minimizes every new interesting input for up to 60s by default, counting no executions
# meanwhile: on the large seeds (a whole provisioners file) that ate short runs whole.
FUZZMINIMIZETIME=${FUZZMINIMIZETIME:-5s}
patterns=("$@")
[ ${#patterns[@]} -gt 0 ] || patterns=(./pkg/... ./internal/...)

# files counts the files of a directory, 0 when it does not exist.
files() { if [ -d "$1" ]; then find "$1" -type f | wc -l; else echo 0; fi; }

log=$(mktemp)
trap 'rm -f "$log"' EXIT
failed=0
printf '%-26s %-34s %10s %6s %6s %s\n' TARGET PACKAGE EXECS NEW CORPUS RESULT
# Listed first: a failing go list inside the for loop's word list would not stop the script,
# which would then report success having fuzzed nothing.
pkgs=$("$GO" list -f '{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}}{{end}}' "${patterns[@]}")
[ -n "$pkgs" ] || { echo "no packages with tests match ${patterns[*]}" >&2; exit 1; }
for pkg in $pkgs; do
	dir=$("$GO" list -f '{{.Dir}}' "$pkg")
	targets=$(cd "$dir" && grep -ho '^func Fuzz[A-Za-z0-9_]*(f \*testing\.F)' -- *_test.go 2>/dev/null | sed 's/^func \(Fuzz[A-Za-z0-9_]*\).*/\1/' || true)
	for target in $targets; do
		result=ok
		corpus_dir="$dir/testdata/fuzz/$target"
		before=$(files "$corpus_dir")
		# -timeout 0: the test binary's default 10m deadline would end a longer FUZZTIME.
		if ! (cd "$dir" && "$GO" test -run '^$' -fuzz "^${target}\$" -fuzztime "$FUZZTIME" \
			-fuzzminimizetime "$FUZZMINIMIZETIME" -parallel "$FUZZPARALLEL" -timeout 0 .) >"$log" 2>&1; then
			result=FAIL
			# Go's coordinator can report its own fuzztime deadline as a failure when it ends
			# mid-execution (go.dev/issue/75804, fixed in Go 1.27): no input failed then, and
			# none is written. Any other failure writes its input to testdata/fuzz.
			if [ "$(files "$corpus_dir")" -eq "$before" ] &&
				grep -q '^    context deadline exceeded$' "$log"; then
				result="ok (go.dev/issue/75804 at the deadline)"
			else
				failed=1
			fi
		fi
		# The last progress line: "fuzz: elapsed: 30s, execs: 123456 (4115/sec), new interesting: 12 (total: 57)".
		progress=$(grep '^fuzz: elapsed' "$log" | tail -1 || true)
		execs=$(sed -n 's/.*execs: \([0-9]*\).*/\1/p' <<<"$progress")
		fresh=$(sed -n 's/.*new interesting: \([0-9]*\).*/\1/p' <<<"$progress")
		corpus=$(sed -n 's/.*(total: \([0-9]*\)).*/\1/p' <<<"$progress")
		printf '%-26s %-34s %10s %6s %6s %s\n' "$target" "${pkg#github.com/plinth-dev/plinth/}" "${execs:--}" "${fresh:--}" "${corpus:--}" "$result"
		if [ "$result" = FAIL ]; then
			sed 's/^/    /' "$log" | tail -40
		fi
	done
done
exit $failed
