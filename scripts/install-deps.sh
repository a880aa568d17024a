#!/usr/bin/env bash
# Installs what lake's build and tests need on a Debian 12 machine with Go 1.26
# and Node 20, and nothing that is already there:
#   - Debian's librocksdb-dev 7.8.3 (grocksdb v1.7.14 builds against it);
#   - the pinned npm tools (tools/npm/package-lock.json) with `npm ci`, kept
#     outside the Go module;
#   - staticcheck, pinned, into ./bin.
# It says what it installs. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

ROCKSDB_DEB_VERSION="7.8.3-2"
STATICCHECK_VERSION="v0.8.2"

say() { printf 'install-deps: %s\n' "$*"; }

if [ ! -f /usr/include/rocksdb/c.h ]; then
  say "librocksdb-dev is missing: installing Debian's librocksdb-dev=${ROCKSDB_DEB_VERSION} with apt-get"
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { say "not root and no sudo: install librocksdb-dev yourself"; exit 1; }
    SUDO="sudo"
  fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "librocksdb-dev=${ROCKSDB_DEB_VERSION}" >/dev/null
fi

command -v node >/dev/null || { say "node is missing: lake's tests need Node 20 for dynalite"; exit 1; }
if [ ! -f tools/npm/node_modules/.package-lock.json ] || [ tools/npm/package-lock.json -nt tools/npm/node_modules/.package-lock.json ]; then
  say "installing the pinned npm tools in tools/npm (npm ci)"
  npm ci --prefix tools/npm --no-audit --no-fund --loglevel=error >/dev/null
fi

if [ ! -x bin/staticcheck ] || ! bin/staticcheck -version 2>/dev/null | grep -q "${STATICCHECK_VERSION#v}"; then
  say "installing staticcheck ${STATICCHECK_VERSION} into ./bin"
  GOBIN="$PWD/bin" go install "honnef.co/go/tools/cmd/staticcheck@${STATICCHECK_VERSION}"
fi
