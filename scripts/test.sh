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
# The test command trades memory for CPU, which is what it runs short of
# (both cores are busy from start to end on a fresh machine):
#   - GOGC=400 for every Go process it starts (the compiler, the linker,
#     vet, staticcheck, the tests): measured on this machine type, a fresh
#     compile of arrow-go's graph took 14% less CPU (1.9 GB peak instead
#     of 1.3), staticcheck over the root module 20% less (5.0 GB peak
#     instead of 2.2), go vet of infra/cdk 5% less. The tests measure
#     allocations, never the heap's size, so they hold under it;
#   - no DWARF in the binaries it links (-ldflags=-w: test binaries, the
#     benchmark's programs): a quarter less CPU per link, some forty links
#     a run. Stack traces and profiles do not use DWARF.
export GOGC="${GOGC:-400}"
export GOFLAGS="${GOFLAGS:+$GOFLAGS }-ldflags=-w"
# make test has installed the tools; the steps below need not check again.
export LAKE_TOOLS_READY=1
cdk_log=$(mktemp)
trap 'rm -f "$cdk_log" "$times_file"*' EXIT
start=$(date +%s)
# cpu sets CPU to the CPU seconds (user + system) this shell's finished
# children have used, from bash's times (run in this shell, not a
# subshell, whose children would be none).
times_file=$(mktemp)
cpu() {
  times >"$times_file.$BASHPID"
  CPU=$(awk 'END { split($1, u, /[ms]/); split($2, s, /[ms]/); printf "%d", u[1]*60 + u[2] + s[1]*60 + s[2] }' "$times_file.$BASHPID")
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
steps lint-root unit compat integration
root_status=$?
wait "$cdk_pid"
cdk_status=$?
echo "---- infra/cdk lane and the quick benchmark (ran alongside) ----"
cat "$cdk_log"
echo "test: root module lane exit ${root_status}, infra/cdk lane exit ${cdk_status}, $(( $(date +%s) - start )) s"
[ "$root_status" -eq 0 ] && [ "$cdk_status" -eq 0 ]
