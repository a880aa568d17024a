#!/usr/bin/env bash
# Builds the register and refresh Lambdas as static bootstrap binaries:
# bin/lambda/<function>/<arch>/bootstrap for arm64 (what deploys, on
# provided.al2023) and for this machine's arch (what the tests run under the
# runtime interface emulator), and prints their sizes.
set -euo pipefail
cd "$(dirname "$0")/.."
host=$(go env GOARCH)
for fn in register refresh; do
  for arch in arm64 "$host"; do
    out="bin/lambda/$fn/$arch/bootstrap"
    CGO_ENABLED=0 GOOS=linux GOARCH="$arch" go build -tags lambda.norpc -trimpath -ldflags "-s -w" -o "$out" "./functions/$fn"
  done
done
printf '%-10s %-6s %10s\n' function arch bytes
for f in bin/lambda/*/*/bootstrap; do
  IFS=/ read -r _ _ fn arch _ <<<"$f"
  printf '%-10s %-6s %10s\n' "$fn" "$arch" "$(stat -c %s "$f")"
done
