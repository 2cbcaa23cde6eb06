#!/usr/bin/env bash
# Builds the demo (www/ into www/dist) against the package built in place (scripts/build.sh first).
# Installs www's own dependencies (Vite, zopfli) when they are missing or do not match its lock file;
# www links the package in the folder above ("context-compactor": "file:.."), as an app would depend on it.
#   scripts/build-demo.sh              install if needed, then vite build
#   scripts/build-demo.sh --deps-only  install if needed (for `npm run dev`)
set -euo pipefail
cd "$(dirname "$0")/../www"

deps_only=0
for arg in "$@"; do
  case "$arg" in
    --deps-only) deps_only=1 ;;
    *) echo "build-demo: unknown argument $arg" >&2; exit 2 ;;
  esac
done

if [[ ! -f ../dist/lite/browser.js || ! -f ../pkg-lite/context_compactor_bg.wasm ]]; then
  echo "build-demo: the package is not built: run scripts/build.sh first" >&2
  exit 1
fi

if [[ -d node_modules ]] && npm ls --depth=0 >/dev/null 2>&1; then
  echo "build-demo: www dependencies found"
else
  log=$(mktemp)
  npm ci --no-audit --no-fund >"$log" 2>&1 || { cat "$log" >&2; rm -f "$log"; exit 1; }
  rm -f "$log"
  echo "build-demo: www dependencies installed (npm ci)"
fi
[[ $deps_only == 1 ]] && exit 0

node_modules/.bin/vite build --logLevel warn
echo "build-demo: www/dist $(cd dist && find . -type f ! -name '*.gz' | sort | xargs stat -c '%n %s' | sed 's#^\./##' | tr '\n' ' ')"
