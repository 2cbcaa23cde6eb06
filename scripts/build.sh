#!/usr/bin/env bash
# Builds the npm package in place: the wasm with wasm-pack into pkg/ (rank tables embedded) and
# pkg-lite/ (no ranks: `--no-default-features`), the lite build's rank files into ranks/, then
# the TypeScript layer into dist/.
#   WASM_OPT=-O3|-Oz|...  run wasm-opt at that level (default: none, see below)
#   SKIP_ENSURE_TOOLS=1   do not run scripts/ensure-tools.sh (scripts/test.sh already did)
#   KEEP_WASM_NAMES=1     keep the wasm's function names, for profilers (bench/persist-browser.mjs PROFILE=)
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"

[[ ${SKIP_ENSURE_TOOLS:-0} == 1 ]] || bash scripts/ensure-tools.sh

# wasm-opt is off by default. Measured on this crate with binaryen 132 (npm): -O3 and -Oz shrink
# the gzipped wasm by about 1% and count no faster (bulk MB/s, µs/message, cold start within noise)
# than rustc's LTO output; Debian's binaryen 108 breaks it (it rewrites wasm-bindgen's externref
# table as anyref, which V8 refuses at init). When asked for, its output is kept only if it loads.
wasm_opt_level=${WASM_OPT:-none}
keep_names=${KEEP_WASM_NAMES:-0}

# A build is skipped when nothing it depends on has changed since the last one.
inputs_hash=$( { find src -type f -print0 | sort -z | xargs -0 sha256sum
  for f in Cargo.toml Cargo.lock build.rs .cargo/config.toml rust-toolchain.toml scripts/build.sh; do [[ -f $f ]] && sha256sum "$f"; done
  echo "$wasm_opt_level $keep_names"; } | sha256sum | cut -c1-16)

# build_wasm <out-dir> <wasm-pack profile flag> [cargo args]: one wasm-pack build into <out-dir>.
build_wasm() {
  local out=$1; shift
  local wasm=$out/context_compactor_bg.wasm
  if [[ -f $out/.inputs-hash && $(cat "$out/.inputs-hash") == "$inputs_hash" && -f $wasm && -f $out/context_compactor.js ]]; then
    echo "build: $out/ is up to date ($(stat -c %s "$wasm") bytes of wasm)"
    return
  fi
  echo "build: wasm-pack build --target web --out-dir $out $*"
  local t0 raw
  t0=$(date +%s)
  rm -f "$out/.inputs-hash"
  wasm-pack --log-level warn build --target web --out-dir "$out" --out-name context_compactor "$@"
  # wasm-pack's .gitignore ('*') would make npm pack drop the directory; its package.json is not ours.
  rm -f "$out/.gitignore" "$out/package.json" "$out/README.md" "$out"/LICENSE*
  # The "name" section (function names for stack traces and profilers: 19 KB of the gzipped
  # wasm) is not needed to run it.
  [[ $keep_names == 1 ]] || node -e '
    const fs = require("node:fs"), b = fs.readFileSync(process.argv[1]), out = [b.subarray(0, 8)];
    const leb = (i) => { let r = 0, s = 0, x; do { x = b[i++]; r += (x & 0x7f) * 2 ** s; s += 7; } while (x & 0x80); return [r, i]; };
    for (let i = 8; i < b.length;) {
      const [len, at] = leb(i + 1), end = at + len;
      const [nl, ns] = b[i] === 0 ? leb(at) : [0, at];
      if (!(b[i] === 0 && b.toString("latin1", ns, ns + nl) === "name")) out.push(b.subarray(i, end));
      i = end;
    }
    fs.writeFileSync(process.argv[1], Buffer.concat(out));' "$wasm"
  raw=$(stat -c %s "$wasm")
  if [[ $wasm_opt_level == none ]]; then
    echo "build: wasm-opt skipped (WASM_OPT=none)"
  elif command -v wasm-opt >/dev/null; then
    # rustc enables these wasm features by default; binaryen must be told.
    wasm-opt "$wasm_opt_level" \
      --enable-bulk-memory --enable-nontrapping-float-to-int --enable-sign-ext \
      --enable-mutable-globals --enable-reference-types --enable-multivalue \
      "$wasm" -o "$wasm.opt"
    if node --input-type=module -e "
        import { readFileSync, existsSync } from 'node:fs';
        const m = await import('./$out/context_compactor.js');
        m.initSync({ module: readFileSync('$wasm.opt') });
        if (existsSync('ranks/cl100k_base.cctab')) m.loadRanks('cl100k_base', readFileSync('ranks/cl100k_base.cctab'));
        if (new m.Tokenizer('cl100k_base').count('hello world') !== 2) throw new Error('bad count');" 2>"$wasm.err"; then
      mv "$wasm.opt" "$wasm"
      echo "build: wasm-opt $wasm_opt_level: $raw -> $(stat -c %s "$wasm") bytes"
    else
      echo "build: wasm-opt $wasm_opt_level produced a module that does not load ($(grep -m1 -o "[A-Za-z]*Error: .*" "$wasm.err" | cut -c1-160)); keeping rustc's output"
      rm -f "$wasm.opt"
    fi
    rm -f "$wasm.err"
  else
    echo "build: wasm-opt not found, the wasm is not post-optimised ($raw bytes)"
  fi
  echo "$inputs_hash" > "$out/.inputs-hash"
  echo "build: $out/ done in $(( $(date +%s) - t0 ))s"
}

build_wasm pkg --release

# The lite build's rank files are the standalone tables build.rs wrote into the OUT_DIR of the
# wasm build just above: cargo names that directory (a no-op build, everything is fresh).
if [[ ! -f ranks/.inputs-hash || $(cat ranks/.inputs-hash) != "$inputs_hash" ]]; then
  out_dir=$(cargo build --release --lib --target wasm32-unknown-unknown --message-format=json 2>/dev/null |
    node -e 'let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", () => {
      for (const l of s.split("\n")) { try { const m = JSON.parse(l); if (m.reason === "build-script-executed" && m.package_id.includes("context-compactor")) console.log(m.out_dir); } catch {} } });')
  rm -rf ranks && mkdir ranks
  cp "$out_dir/o200k_base.cctab" "$out_dir/cl100k_base.cctab" ranks/
  echo "$inputs_hash" > ranks/.inputs-hash
fi
build_wasm pkg-lite --profile lite --no-default-features
echo "build: ranks/ $(cd ranks && stat -c '%n %s' *.cctab | tr '\n' ' ')"

rm -rf dist
node_modules/.bin/tsc -p tsconfig.json
# The lite entry is the same layer; only its js/wasm.ts names pkg-lite/ (see there).
# The storage adapters (dist/storage/) need no wasm: the lite copy imports the same files, and
# the same error classes (dist/errors.js), so that an adapter's StorageError is the lite entry's.
mkdir dist/lite
cp dist/*.js dist/*.d.ts dist/lite/
# The command-line tool runs on the full Node entry only.
rm dist/lite/cli.js dist/lite/cli.d.ts
chmod +x dist/cli.js
sed -i -e 's#"\.\./pkg/#"../../pkg-lite/#' -e 's#"\.\./ranks/#"../../ranks/#' dist/lite/wasm.js dist/lite/wasm.d.ts
sed -i -e 's#"\./storage/#"../storage/#' dist/lite/*.js dist/lite/*.d.ts
echo 'export * from "../errors.js";' > dist/lite/errors.js
echo 'export * from "../errors.js";' > dist/lite/errors.d.ts
if grep -lE '"\.\./(pkg|ranks)/' dist/lite/*; then echo "build: dist/lite/ still refers to the full build (above)" >&2; exit 1; fi
echo "build: dist/ $(cd dist && echo *.js) storage/ lite/"
