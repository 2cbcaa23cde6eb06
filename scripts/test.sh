#!/usr/bin/env bash
# `npm test`: every test. Installs what it needs first (scripts/ensure-tools.sh --browser --postgres), checks
# the habits (cargo fmt --check, cargo clippy -D warnings), builds the package (scripts/build.sh)
# and the demo (scripts/build-demo.sh: www/dist), checks the sizes the docs state
# (scripts/sizes.mjs), type-checks the TypeScript layer, tests/types, www and the README's blocks
# (tsc --noEmit; scripts/readme-types.mjs), then runs
#   1. cargo test                        the Rust core, natively
#   2. node --test tests/js/             the package's Node entry against the shared fixtures
#      tests/browser/ tests/pack/        the browser entry and the demo in headless Chromium, and npm pack
# in one node test run, so that its summary is the closing line.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"

if [[ ! -d ../shared/fixtures ]]; then
  echo "test: ../shared/fixtures is missing (the shared fixtures live beside the repo)" >&2
  exit 1
fi

bash scripts/ensure-tools.sh --browser --postgres

echo "test: cargo fmt --check"
cargo fmt --check
echo "test: cargo clippy --all-targets -- -D warnings"
cargo clippy --all-targets -- -D warnings

SKIP_ENSURE_TOOLS=1 bash scripts/build.sh
bash scripts/build-demo.sh

# The download sizes the docs state are the build's (scripts/sizes.mjs --write updates them).
echo "test: download sizes in the docs"
node scripts/sizes.mjs --check

# The TypeScript layer (the build compiled it; this checks it on its own) and what a consumer
# types against the providers' SDKs (tests/types, through the built package).
echo "test: tsc --noEmit (js/, tests/types/, www/, the README's blocks)"
node_modules/.bin/tsc -p tsconfig.json --noEmit
node_modules/.bin/tsc -p tests/types/tsconfig.json
# The adapters' types against the other supported majors of `ai` (npm aliases).
node_modules/.bin/tsc -p tests/types/tsconfig.ai-v5.json
node_modules/.bin/tsc -p tests/types/tsconfig.ai-v6.json
node_modules/.bin/tsc -p www/tsconfig.json
# Every TypeScript block of the README, as a user pastes it, against openai 7 and 6.
node scripts/readme-types.mjs

echo "test: cargo test"
cargo test ${CARGO_TEST_ARGS:-}

echo "test: node --test (Node entry, browser entry in Chromium, npm pack)"
shopt -s nullglob
node --test --test-reporter=spec --test-concurrency=1 tests/js/*.test.mjs tests/browser/*.test.mjs tests/pack/*.test.mjs
