#!/usr/bin/env bash
# Installs what lake's build and tests need on a Debian 12 machine with Go 1.26
# and Node 20, and nothing that is already there:
#   - Debian's librocksdb-dev 7.8.3 (grocksdb v1.7.14 builds against it);
#   - Debian's chromium, which the catalog browser's test drives headless
#     (through the pinned playwright-core, which never downloads a browser);
#   - the pinned npm tools (tools/npm/package-lock.json) with `npm ci`, kept
#     outside the Go module;
#   - staticcheck, versitygw (an S3-protocol server) and aws-lambda-rie (the
#     Lambda runtime interface emulator), pinned as tools in go.mod, built
#     into ./bin.
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

say() { printf 'install-deps: %s\n' "$*"; }
install_start=$(date +%s)

# Debian packages: one apt-get run for all that are missing, in the
# background while the npm and Go tools install (it is mostly download and
# unpacking; they are mostly compiling). Without their recommendations:
# chromium's alone are 120 packages (printing, Samba, avahi, Perl's web
# libraries) that a headless browser never uses, and their unpacking took
# CPU from the builds.
apt_pkgs=()
[ -f /usr/include/rocksdb/c.h ] || apt_pkgs+=("librocksdb-dev=${ROCKSDB_DEB_VERSION}")
if [ "${1:-}" != "run" ] && [ ! -x /usr/bin/chromium ]; then
  # the catalog browser's test drives it headless; its screenshots are set
  # in the Liberation fonts (a recommendation of chromium's, named here as
  # recommendations are not installed)
  apt_pkgs+=(chromium fonts-liberation)
fi
if [ ${#apt_pkgs[@]} -gt 0 ]; then
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { say "not root and no sudo: install ${apt_pkgs[*]} yourself"; exit 1; }
    SUDO="sudo"
  fi
  say "installing Debian's ${apt_pkgs[*]} with apt-get"
  apt_log=$(mktemp)
  ( $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${apt_pkgs[@]}" ) >"$apt_log" 2>&1 &
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

# The modules the builds will need (the root module's packages and tests,
# the integration suite's, and infra/cdk's jsii bundles) download alongside
# too, so the builds that follow do not wait on the network. go list
# fetches just those; go mod download would fetch every module in the
# graph, 1.4 GB with the tools' (measured: 24 s and 11 CPU-seconds).
( go list -deps -test -tags integration ./... && cd infra/cdk && go list -deps -test ./... ) >/dev/null 2>&1 &
mod_pid=$!

command -v node >/dev/null || { say "node is missing: lake's tests need Node 20 for dynalite and the browser test"; exit 1; }
if [ ! -f tools/npm/node_modules/.package-lock.json ] || [ tools/npm/package-lock.json -nt tools/npm/node_modules/.package-lock.json ]; then
  say "installing the pinned npm tools in tools/npm (npm ci, alongside the Go tools' builds)"
  npm ci --prefix tools/npm --no-audit --no-fund --loglevel=error >/dev/null &
  npm_pid=$!
fi

# The Go tools (staticcheck, versitygw, aws-lambda-rie) are `tool` lines in
# go.mod: pinned there, and resolved with lake's own dependencies, so the
# modules they share with lake (the AWS SDK, x/net, compress, the standard
# library above net) are the same versions, built with the same settings
# (cgo on, as lake's build), and compiled once on a fresh machine: the tools'
# build fills the build cache that lake's go vet and tests then reuse
# (measured: the three tools plus lake's go vet took 704 CPU-seconds built
# apart with CGO_ENABLED=0, 614 this way). They build in one go build, so
# work in progress is shared between them too, once per machine into a
# cache folder named for their versions (every clone on this machine reuses
# it, and a pin change builds anew), and are linked into ./bin.
TOOLS_CACHE="${LAKE_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/lake-tools}"
tools=(
  "staticcheck honnef.co/go/tools/cmd/staticcheck honnef.co/go/tools"
  "versitygw github.com/versity/versitygw/cmd/versitygw github.com/versity/versitygw"
  "aws-lambda-rie github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie github.com/aws/aws-lambda-runtime-interface-emulator"
)
missing_pkgs=()
missing_dirs=()
tool_dirs=() # each tool's cache folder, named for go.mod's version of it
for t in "${tools[@]}"; do
  read -r name pkg mod <<<"$t"
  version=$(go list -m -f '{{.Version}}' "$mod") || { say "go.mod has no tool line for $mod"; exit 1; }
  dir="$TOOLS_CACHE/$name@$version"
  tool_dirs+=("$dir")
  if [ ! -x "$dir/$name" ]; then
    missing_pkgs+=("$pkg")
    missing_dirs+=("$dir")
  fi
done
mkdir -p bin
if [ ${#missing_pkgs[@]} -gt 0 ]; then
  say "building ${missing_pkgs[*]##*/} (go.mod's tool versions) into $TOOLS_CACHE"
  built=$(date +%s)
  out=$(mktemp -d)
  # No DWARF, as the test command links (scripts/test.sh).
  go build -ldflags=-w -o "$out/" "${missing_pkgs[@]}"
  for i in "${!missing_pkgs[@]}"; do
    name=${missing_pkgs[$i]##*/}
    mkdir -p "${missing_dirs[$i]}"
    mv "$out/$name" "${missing_dirs[$i]}/$name"
  done
  rm -rf "$out"
  say "built the tools in $(( $(date +%s) - built )) s"
fi
for dir in "${tool_dirs[@]}"; do
  name=${dir##*/}
  name=${name%@*}
  ln -sf "$dir/$name" "bin/$name"
done
waited=$(date +%s)
if [ -n "${npm_pid:-}" ]; then
  wait "$npm_pid" || { say "npm ci in tools/npm failed"; exit 1; }
fi
wait "$mod_pid" || say "fetching the modules failed; the build will fetch what it needs (or say why)"
wait_apt
say "waited $(( $(date +%s) - waited )) s for npm, the modules and apt after the tools; $(( $(date +%s) - install_start )) s in all"
