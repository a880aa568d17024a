#!/usr/bin/env bash
# Installs what lake's build and tests need on a Debian 12 machine with Go 1.26
# and Node 20, and nothing that is already there:
#   - Debian's librocksdb-dev 7.8.3 (grocksdb v1.7.14 builds against it);
#   - Debian's chromium, which the catalog browser's test drives headless
#     (through the pinned playwright-core, which never downloads a browser);
#   - the pinned npm tools (tools/npm/package-lock.json) with `npm ci`, kept
#     outside the Go module;
#   - staticcheck, versitygw (an S3-protocol server) and aws-lambda-rie (the
#     Lambda runtime interface emulator), pinned, built into ./bin.
# It says what it installs. Safe to run again.
#
#   scripts/install-deps.sh        everything the build and tests need
#   scripts/install-deps.sh run    only what `make run` (local mode) needs
set -euo pipefail
cd "$(dirname "$0")/.."
# The test command (scripts/test.sh) runs after this script and sets
# LAKE_TOOLS_READY for the make steps it runs, so they do not check again.
[ -n "${LAKE_TOOLS_READY:-}" ] && exit 0

ROCKSDB_DEB_VERSION="7.8.3-2"
STATICCHECK_VERSION="v0.8.2"
VERSITYGW_VERSION="v1.8.0"
RIE_VERSION="v0.0.0-20261030222936-bef5c4ba774d"

say() { printf 'install-deps: %s\n' "$*"; }

# Debian packages: one apt-get run for all that are missing, in the
# background while the npm and Go tools install (it is mostly download and
# unpacking; they are mostly compiling).
apt_pkgs=()
[ -f /usr/include/rocksdb/c.h ] || apt_pkgs+=("librocksdb-dev=${ROCKSDB_DEB_VERSION}")
if [ "${1:-}" != "run" ] && [ ! -x /usr/bin/chromium ]; then
  apt_pkgs+=(chromium) # the catalog browser's test drives it headless
fi
if [ ${#apt_pkgs[@]} -gt 0 ]; then
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { say "not root and no sudo: install ${apt_pkgs[*]} yourself"; exit 1; }
    SUDO="sudo"
  fi
  say "installing Debian's ${apt_pkgs[*]} with apt-get"
  apt_log=$(mktemp)
  ( $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${apt_pkgs[@]}" ) >"$apt_log" 2>&1 &
  apt_pid=$!
fi
wait_apt() {
  if [ -n "${apt_pid:-}" ]; then
    if ! wait "$apt_pid"; then
      cat "$apt_log" >&2
      say "apt-get install ${apt_pkgs[*]} failed"
      exit 1
    fi
    rm -f "$apt_log"
    apt_pid=""
  fi
}

if [ "${1:-}" = "run" ]; then
  wait_apt
  exit 0
fi

# The modules' downloads (the root module and infra/cdk's jsii bundles) go
# on alongside too, so the builds that follow do not wait on the network.
( go mod download && cd infra/cdk && go mod download ) >/dev/null 2>&1 &
mod_pid=$!

command -v node >/dev/null || { say "node is missing: lake's tests need Node 20 for dynalite and the browser test"; exit 1; }
if [ ! -f tools/npm/node_modules/.package-lock.json ] || [ tools/npm/package-lock.json -nt tools/npm/node_modules/.package-lock.json ]; then
  say "installing the pinned npm tools in tools/npm (npm ci, alongside the Go tools' builds)"
  npm ci --prefix tools/npm --no-audit --no-fund --loglevel=error >/dev/null &
  npm_pid=$!
fi

# go_tool NAME PACKAGE VERSION: build a pinned Go tool once per machine into
# a cache folder named for its version (so every clone of the repository on
# this machine reuses it, and a pin change builds the new one), and link it
# into ./bin. The tools build one after another: side by side, each would
# compile the standard library and the modules they share again (the build
# cache does not share work in progress between processes). Their modules
# download in the background meanwhile (go install -n resolves and fetches a
# build's modules without compiling), so no build waits on the network.
TOOLS_CACHE="${LAKE_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/lake-tools}"
tools=(
  "staticcheck honnef.co/go/tools/cmd/staticcheck $STATICCHECK_VERSION"
  "versitygw github.com/versity/versitygw/cmd/versitygw $VERSITYGW_VERSION"
  "aws-lambda-rie github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie $RIE_VERSION"
)
missing=()
for t in "${tools[@]}"; do
  read -r name pkg version <<<"$t"
  [ -x "$TOOLS_CACHE/$name@$version/$name" ] || missing+=("$t")
done
fetch_pid=""
if [ ${#missing[@]} -gt 1 ]; then
  ( for t in "${missing[@]:1}"; do
      read -r _ pkg version <<<"$t"
      CGO_ENABLED=0 go install -n "$pkg@$version" >/dev/null 2>&1 || true
    done ) &
  fetch_pid=$!
fi
mkdir -p bin
for t in "${tools[@]}"; do
  read -r name pkg version <<<"$t"
  dir="$TOOLS_CACHE/$name@$version"
  if [ ! -x "$dir/$name" ]; then
    say "building $name $version into $dir"
    mkdir -p "$dir"
    GOBIN="$dir" CGO_ENABLED=0 go install "$pkg@$version"
  fi
  ln -sf "$dir/$name" "bin/$name"
done
[ -z "$fetch_pid" ] || wait "$fetch_pid" || true
if [ -n "${npm_pid:-}" ]; then
  wait "$npm_pid" || { say "npm ci in tools/npm failed"; exit 1; }
fi
wait "$mod_pid" || say "go mod download failed; the build will fetch what it needs (or say why)"
wait_apt
