#!/usr/bin/env bash
# `npm test`: every test. Installs what it needs first (scripts/ensure-tools.sh --browser --postgres), checks
# the habits (cargo fmt --check, cargo clippy -D warnings), builds the package (scripts/build.sh)
# and the demo (scripts/build-demo.sh: www/dist), checks the sizes the docs state
# (scripts/sizes.mjs) and the generated options reference (scripts/reference.sh --check),
# type-checks the TypeScript layer, tests/types, www and the README's blocks
# (tsc --noEmit; scripts/readme-types.mjs), checks js/ for import cycles (dpdm), then runs
#   1. cargo test                        the Rust core, natively
#   2. node --test tests/js/             the package's Node entry
#      tests/browser/ tests/pack/        the browser entry and the demo in headless Chromium, and npm pack
# in one node test run, so that its summary closes the output. Every suite runs on the project's
# own fixtures (tests/fixtures/, checked against their generator first). The shared real-world
# fixtures (../shared/fixtures beside the repository, or CC_SHARED: that folder or the one that
# holds it) add one more suite when they are there (tests/shared.rs, tests/shared/, and the
# memory bounds of tests/memory.rs, measured on real messages); when not, the last line says so.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"

shared_fixtures=../shared/fixtures
if [[ -n "${CC_SHARED:-}" ]]; then
  shared_fixtures=$CC_SHARED
  if [[ -d $CC_SHARED/fixtures ]]; then shared_fixtures=$CC_SHARED/fixtures; fi
fi
shared_tests=()
if [[ -d $shared_fixtures ]]; then
  shared_present=1
  shared_tests=(tests/shared/*.test.mjs)
else
  shared_present=0
  # The Rust tests of the suite are #[ignore]d for a plain `cargo test`; the Node ones skip.
  shared_count=$(( $(cat tests/shared.rs tests/memory.rs | grep -c '^#\[ignore = "reads the shared fixtures"\]') + $(cat tests/shared/*.test.mjs | grep -c '{ skip }') ))
fi
shared_note() {
  if [[ $shared_present == 0 ]]; then
    echo "test: shared fixtures not found at $shared_fixtures: $shared_count tests skipped (tests/shared.rs, tests/memory.rs, tests/shared/; set CC_SHARED or put shared/ beside the repository)"
  fi
}
# Said last, whatever the outcome, so that it is not lost above the summaries.
trap shared_note EXIT

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
# The options reference in docs/reference/ is TypeDoc's output over the built declarations.
echo "test: the options reference (docs/reference/) matches the types"
bash scripts/reference.sh --check

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

# No import cycle among js/'s modules: in one, a module can run before what it imports is
# defined. Type-only imports are left out (--transform): they are erased from the JS.
echo "test: no import cycles in js/ (dpdm)"
node_modules/.bin/dpdm --transform --no-tree --no-warning --exit-code circular:1 'js/**/*.ts'

echo "test: the fixtures are what tests/fixtures/agents.mjs writes"
node tests/fixtures/agents.mjs --check

echo "test: cargo test"
cargo test ${CARGO_TEST_ARGS:-}
if [[ $shared_present == 1 ]]; then
  echo "test: cargo test --test shared --test memory -- --ignored (the shared fixtures at $shared_fixtures)"
  cargo test --test shared --test memory -- --ignored
fi

echo "test: node --test (Node entry, browser entry in Chromium, npm pack${shared_tests:+, the shared fixtures})"
shopt -s nullglob
node --test --test-reporter=spec --test-concurrency=1 tests/js/*.test.mjs tests/browser/*.test.mjs tests/pack/*.test.mjs "${shared_tests[@]}"
