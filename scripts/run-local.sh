#!/usr/bin/env bash
# `make run`: installs what local mode needs (Debian's librocksdb-dev, when
# missing), builds the lake command and starts `lake local` in ./.lake with
# the demo catalog. Extra arguments go to `lake local`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh run
echo "run: building bin/lake"
go build -o bin/lake ./cmd/lake
exec bin/lake local "$@"
