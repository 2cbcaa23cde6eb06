#!/usr/bin/env bash
# `npm test`: every test. Installs what it needs first (scripts/ensure-tools.sh --browser), builds
# the package (scripts/build.sh), then runs
#   1. cargo test                        the Rust core, natively
#   2. node --test tests/js/             the package's Node entry against the shared fixtures
#      tests/browser/ tests/pack/        the browser entry in headless Chromium, and npm pack
# in one node test run, so that its summary is the closing line.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"

if [[ ! -d ../shared/fixtures ]]; then
  echo "test: ../shared/fixtures is missing (the shared fixtures live beside the repo)" >&2
  exit 1
fi

bash scripts/ensure-tools.sh --browser
SKIP_ENSURE_TOOLS=1 bash scripts/build.sh

echo "test: cargo test"
cargo test ${CARGO_TEST_ARGS:-}

echo "test: node --test (Node entry, browser entry in Chromium, npm pack)"
shopt -s nullglob
node --test --test-reporter=spec --test-concurrency=1 tests/js/*.test.mjs tests/browser/*.test.mjs tests/pack/*.test.mjs
