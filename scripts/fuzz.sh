#!/usr/bin/env bash
# Runs every fuzz target in the module for the given time each (default 60s),
# one at a time, and stops at the first finding (go test writes the failing
# input under the package's testdata/fuzz/, a regression case from then on).
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime="${1:-60s}"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for pkg in $(go list ./...); do
  for target in $(go test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true); do
    echo "== $pkg $target ($fuzztime)"
    if ! go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" -parallel 2 "$pkg" >"$log" 2>&1; then
      grep -v '^fuzz: elapsed' "$log" | tail -40
      exit 1
    fi
    grep '^fuzz: elapsed' "$log" | tail -1
  done
done
