#!/usr/bin/env bash
# The README's test command (make test runs it after make tools). Two lanes
# run side by side, since neither keeps both cores busy on its own (one huge
# CDK package compiles on one core; the tests wait on servers):
#   root module: gofmt, go vet and staticcheck, go test ./..., the client-
#                compatibility suite (verbose: each replayed call listed), the
#                integration suite (their output streams here);
#   infra/cdk:   go vet and staticcheck, the CDK tests, then the quick
#                benchmark (output printed when both lanes are done). The
#                benchmark's binaries reuse what the root lane's go vet has
#                compiled by then; the two lanes take about as long.
# It fails when either lane fails.
set -uo pipefail
cd "$(dirname "$0")/.."
# go test's own vet pass is off: each lane's lint step has just run go vet
# (every analyzer) over the same packages, and go test's pass would analyze
# the whole dependency graph again for its subset (measured on a fresh
# machine: 79 s of the root module's 73 s test build, on two cores).
export GOTESTFLAGS="${GOTESTFLAGS:--vet=off}"
# No DWARF in the binaries the test command links (-ldflags=-w: the test
# binaries, the benchmark's programs): a quarter less CPU per link
# (measured: 4.9 → 3.7 CPU-s for internal/discovery's test binary), some
# forty links a run. Stack traces and profiles do not use DWARF. (GOGC=400
# was tried too: a fresh compile took 14% less CPU alone, but whole runs
# were no faster, their system time up as the larger heaps faulted in more
# pages, so it is not set.)
export GOFLAGS="${GOFLAGS:+$GOFLAGS }-ldflags=-w"
# make test has installed the tools; the steps below need not check again.
export LAKE_TOOLS_READY=1
cdk_log=$(mktemp)
trap 'rm -f "$cdk_log" "$times_file"*' EXIT
start=$(date +%s)
# cpu sets CPU to the CPU seconds (user + system) this shell's finished
# children have used, from bash's times (run in this shell, not a
# subshell, whose children would be none). Each lane runs in a subshell of
# its own, so a lane's steps count only that lane's processes (the main
# shell reaps the other lane when it ends, and would add all of its CPU to
# whichever step was running then). A process its parent never waits for
# is not counted (the node process jsii starts under the CDK tests).
times_file=$(mktemp)
cpu() {
  local f="$times_file.$BASHPID" # this shell's: each lane has its own
  times >"$f"
  CPU=$(awk 'END { split($1, u, /[ms]/); split($2, s, /[ms]/); printf "%d", u[1]*60 + u[2] + s[1]*60 + s[2] }' "$f")
}
# steps T...: make each target in turn, stopping at the first failure,
# and say how long each took, in wall and CPU seconds.
steps() {
  local t s c
  for t in "$@"; do
    s=$(date +%s)
    cpu
    c=$CPU
    make --no-print-directory "$t" || { echo "test: $t failed after $(( $(date +%s) - s )) s"; return 1; }
    cpu
    echo "test: $t took $(( $(date +%s) - s )) s, $(( CPU - c )) CPU-s"
  done
}
( steps lint-cdk cdk-test bench-quick >"$cdk_log" 2>&1 ) &
cdk_pid=$!
( steps lint-root unit compat integration )
root_status=$?
wait "$cdk_pid"
cdk_status=$?
echo "---- infra/cdk lane and the quick benchmark (ran alongside) ----"
cat "$cdk_log"
echo "test: root module lane exit ${root_status}, infra/cdk lane exit ${cdk_status}, $(( $(date +%s) - start )) s"
[ "$root_status" -eq 0 ] && [ "$cdk_status" -eq 0 ]
