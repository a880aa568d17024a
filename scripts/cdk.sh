#!/usr/bin/env bash
# Runs the pinned CDK CLI (tools/npm) on the infra/cdk app, after building the
# arm64 Lambda bootstraps it packages: scripts/cdk.sh synth|deploy|destroy [args].
# synth works offline; deploy and destroy need AWS credentials (and Docker,
# for the discovery image).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x tools/npm/node_modules/.bin/cdk ] || scripts/install-deps.sh
scripts/build-lambdas.sh >/dev/null
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION=20
export CDK_DISABLE_CLI_TELEMETRY=true
cd infra/cdk
exec ../../tools/npm/node_modules/.bin/cdk "$@" --no-notices --no-version-reporting
