#!/usr/bin/env bash
# Builds the npm package in place: the wasm with wasm-pack into pkg/, then the TypeScript layer into dist/.
#   WASM_OPT=-O3|-Oz|...  run wasm-opt at that level (default: none, see below)
#   SKIP_ENSURE_TOOLS=1   do not run scripts/ensure-tools.sh (scripts/test.sh already did)
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"

[[ ${SKIP_ENSURE_TOOLS:-0} == 1 ]] || bash scripts/ensure-tools.sh

# wasm-opt is off by default. Measured on this crate with binaryen 132 (npm): -O3 and -Oz shrink
# the gzipped wasm by about 1% and count no faster (bulk MB/s, µs/message, cold start within noise)
# than rustc's LTO output; Debian's binaryen 108 breaks it (it rewrites wasm-bindgen's externref
# table as anyref, which V8 refuses at init). When asked for, its output is kept only if it loads.
wasm_opt_level=${WASM_OPT:-none}
wasm=pkg/context_compactor_bg.wasm

# Skip the wasm build when nothing it depends on has changed since the last one.
inputs_hash=$( { find src -type f -print0 | sort -z | xargs -0 sha256sum
  for f in Cargo.toml Cargo.lock build.rs .cargo/config.toml rust-toolchain.toml scripts/build.sh; do [[ -f $f ]] && sha256sum "$f"; done
  echo "$wasm_opt_level"; } | sha256sum | cut -c1-16)
if [[ -f pkg/.inputs-hash && $(cat pkg/.inputs-hash) == "$inputs_hash" && -f $wasm && -f pkg/context_compactor.js ]]; then
  echo "build: pkg/ is up to date ($(stat -c %s $wasm) bytes of wasm)"
else
  echo "build: wasm-pack build --release --target web"
  t0=$(date +%s)
  rm -f pkg/.inputs-hash
  wasm-pack --log-level warn build --release --target web --out-dir pkg --out-name context_compactor
  # wasm-pack's pkg/.gitignore ('*') would make npm pack drop pkg/; its package.json is not ours.
  rm -f pkg/.gitignore pkg/package.json pkg/README.md pkg/LICENSE*
  raw=$(stat -c %s $wasm)
  if [[ $wasm_opt_level == none ]]; then
    echo "build: wasm-opt skipped (WASM_OPT=none)"
  elif command -v wasm-opt >/dev/null; then
    # rustc enables these wasm features by default; binaryen must be told.
    wasm-opt "$wasm_opt_level" \
      --enable-bulk-memory --enable-nontrapping-float-to-int --enable-sign-ext \
      --enable-mutable-globals --enable-reference-types --enable-multivalue \
      "$wasm" -o "$wasm.opt"
    if node --input-type=module -e "
        import { readFileSync } from 'node:fs';
        const m = await import('./pkg/context_compactor.js');
        m.initSync({ module: readFileSync('$wasm.opt') });
        if (new m.Tokenizer('cl100k_base').count('hello world') !== 2) throw new Error('bad count');" 2>"$wasm.err"; then
      mv "$wasm.opt" "$wasm"
      echo "build: wasm-opt $wasm_opt_level: $raw -> $(stat -c %s $wasm) bytes"
    else
      echo "build: wasm-opt $wasm_opt_level produced a module that does not load ($(grep -m1 -o "[A-Za-z]*Error: .*" "$wasm.err" | cut -c1-160)); keeping rustc's output"
      rm -f "$wasm.opt"
    fi
    rm -f "$wasm.err"
  else
    echo "build: wasm-opt not found, the wasm is not post-optimised ($raw bytes)"
  fi
  echo "$inputs_hash" > pkg/.inputs-hash
  echo "build: wasm done in $(( $(date +%s) - t0 ))s"
fi

rm -rf dist
node_modules/.bin/tsc -p tsconfig.json
echo "build: dist/ $(cd dist && echo *.js)"
