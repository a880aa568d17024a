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
# make test has installed the tools; the steps below need not check again.
export LAKE_TOOLS_READY=1
cdk_log=$(mktemp)
trap 'rm -f "$cdk_log"' EXIT
start=$(date +%s)
# steps T...: make each target in turn, stopping at the first failure,
# and say how long each took.
steps() {
  local t s
  for t in "$@"; do
    s=$(date +%s)
    make --no-print-directory "$t" || { echo "test: $t failed after $(( $(date +%s) - s )) s"; return 1; }
    echo "test: $t took $(( $(date +%s) - s )) s"
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
