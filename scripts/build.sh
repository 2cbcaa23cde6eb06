#!/usr/bin/env bash
# Builds the npm package in place: the wasm with wasm-pack into pkg/ (rank tables embedded) and
# pkg-lite/ (no ranks: `--no-default-features`), the lite build's rank files into ranks/, then
# the TypeScript layer into dist/.
#   WASM_OPT="-O3 ..."    wasm-opt passes for pkg/ (default: none) and pkg-lite/ (default: below)
#   SKIP_ENSURE_TOOLS=1   do not run scripts/ensure-tools.sh (scripts/test.sh already did)
#   KEEP_WASM_NAMES=1     keep the wasm's function names, for profilers (bench/persist-browser.mjs PROFILE=)
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"

[[ ${SKIP_ENSURE_TOOLS:-0} == 1 ]] || bash scripts/ensure-tools.sh

# wasm-opt is binaryen 132 from npm (a devDependency): Debian's binaryen 108 breaks the module (it
# rewrites wasm-bindgen's externref table as anyref, which V8 refuses at init). Its output is
# kept only if it loads.
# The full build is not post-optimised: -O3 and -Oz shrink its gzipped wasm by about 1% and count
# no faster than rustc's LTO output.
# The lite build is what the demo page downloads, gzipped (the target: code and o200k_base table
# <= 1.0 MB), so its passes are the ones that shrink the gzip, measured with zopfli on the lite
# wasm (420,064 B): --reorder-functions-by-name puts the copies of a generic function (and the
# functions of a module) side by side, where gzip's 32 KB window finds their common bytes
# (-12.0 KB); -O1 then removes 41 KB of raw code (-2.9 KB gzipped); together 405,109 B. Then
# scripts/order-functions.mjs puts functions whose code is alike side by side (-6.7 KB more);
# of -O2's passes, --code-folding (shared tails merged) and --code-pushing save 1.4 KB more, and
# -O1 once more after them about 1 KB. The first sort by name is left out since the order script
# compares each function with the last four placed (2026-11-24: 388,022 B with it, 387,386 B
# without; the script's own order then starts from rustc's, and the sort by name after it remains).
# -Oz and -Os are worse (+50 KB gzipped): their inlining copies small functions into many
# callers, which makes the code smaller raw but less alike (--inlining alone: +136 KB gzipped).
full_passes=${WASM_OPT:-none}
lite_passes=${WASM_OPT:-"-O1 --code-folding --code-pushing -O1"}
wasm_opt=node_modules/.bin/wasm-opt
keep_names=${KEEP_WASM_NAMES:-0}

# A build is skipped when nothing it depends on has changed since the last one.
inputs_hash=$( { find src -type f -print0 | sort -z | xargs -0 sha256sum
  for f in Cargo.toml Cargo.lock build.rs .cargo/config.toml rust-toolchain.toml scripts/build.sh scripts/order-functions.mjs scripts/short-names.mjs scripts/leb128.mjs; do [[ -f $f ]] && sha256sum "$f"; done
  echo "$full_passes/$lite_passes $keep_names"; } | sha256sum | cut -c1-16)

# build_wasm <out-dir> <wasm-opt passes|none> <for gzip: yes|no> <wasm-pack profile
# flag> [cargo args]: one wasm-pack build into <out-dir>.
build_wasm() {
  local out=$1 passes=$2 for_gzip=$3; shift 3
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
  # For gzip, imports and exports get short names (in the wasm and the glue): wasm-bindgen's are
  # long, an import's with a hash (2026-11-24, lite wasm, zopfli: 387,386 -> 386,076 B).
  [[ $for_gzip == yes ]] && node scripts/short-names.mjs "$wasm" "$out/context_compactor.js"
  raw=$(stat -c %s "$wasm")
  if [[ $passes == none ]]; then
    echo "build: wasm-opt skipped"
  elif [[ -x $wasm_opt ]]; then
    # rustc enables these wasm features by default; binaryen must be told.
    local features=(--enable-bulk-memory --enable-nontrapping-float-to-int --enable-sign-ext
      --enable-mutable-globals --enable-reference-types --enable-multivalue)
    # -g: wasm-opt writes the names it read only when told to.
    [[ $keep_names == 1 ]] && features+=(-g)
    if [[ $for_gzip == yes ]]; then
      # shellcheck disable=SC2086 # $passes is a list of flags
      "$wasm_opt" $passes -g "${features[@]}" "$wasm" -o "$wasm.named"
      node scripts/order-functions.mjs "$wasm.named" "$wasm.ordered"
      "$wasm_opt" --reorder-functions-by-name "${features[@]}" "$wasm.ordered" -o "$wasm.opt"
      rm -f "$wasm.named" "$wasm.ordered"
    else
      # shellcheck disable=SC2086
      "$wasm_opt" $passes "${features[@]}" "$wasm" -o "$wasm.opt"
    fi
    if node --input-type=module -e "
        import { readFileSync, existsSync } from 'node:fs';
        const m = await import('./$out/context_compactor.js');
        m.initSync({ module: readFileSync('$wasm.opt') });
        if (existsSync('ranks/cl100k_base.cctab')) m.loadRanks('cl100k_base', readFileSync('ranks/cl100k_base.cctab'));
        if (new m.Tokenizer('cl100k_base').count('hello world') !== 2) throw new Error('bad count');" 2>"$wasm.err"; then
      mv "$wasm.opt" "$wasm"
      echo "build: wasm-opt $passes: $raw -> $(stat -c %s "$wasm") bytes"
    else
      echo "build: wasm-opt $passes produced a module that does not load ($(grep -m1 -o "[A-Za-z]*Error: .*" "$wasm.err" | cut -c1-160)); keeping rustc's output"
      rm -f "$wasm.opt"
    fi
    rm -f "$wasm.err"
  else
    echo "build: $wasm_opt not found (npm ci installs it), the wasm is not post-optimised ($raw bytes)"
  fi
  # The custom sections are not needed to run it: "name" (function names for stack traces and
  # profilers: 19 KB of the gzipped wasm; wasm-opt, which sorts by these names, writes none),
  # "producers" and "target_features" (read by wasm-bindgen, which has run).
  [[ $keep_names == 1 ]] || node -e '
    const fs = require("node:fs"), b = fs.readFileSync(process.argv[1]), out = [b.subarray(0, 8)];
    const leb = (i) => { let r = 0, s = 0, x; do { x = b[i++]; r += (x & 0x7f) * 2 ** s; s += 7; } while (x & 0x80); return [r, i]; };
    for (let i = 8; i < b.length;) {
      const [len, at] = leb(i + 1), end = at + len;
      if (b[i] !== 0) out.push(b.subarray(i, end));
      i = end;
    }
    fs.writeFileSync(process.argv[1], Buffer.concat(out));' "$wasm"
  echo "$inputs_hash" > "$out/.inputs-hash"
  echo "build: $out/ done in $(( $(date +%s) - t0 ))s"
}

build_wasm pkg "$full_passes" no --release

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
build_wasm pkg-lite "$lite_passes" yes --profile lite --no-default-features
echo "build: ranks/ $(cd ranks && stat -c '%n %s' *.cctab | tr '\n' ' ')"

rm -rf dist
node_modules/.bin/tsc -p tsconfig.json
# The lite entry is the same layer; only its js/wasm.ts names pkg-lite/ (see there).
# The storage adapters (dist/storage/) need no wasm: the lite copy imports the same files, and
# the same error classes (dist/errors.js), so that an adapter's StorageError is the lite entry's.
mkdir dist/lite
cp dist/*.js dist/*.d.ts dist/lite/
# The command-line tool (dist/cli.js and dist/cli/) runs on the full Node entry only.
rm dist/lite/cli.js dist/lite/cli.d.ts
chmod +x dist/cli.js
sed -i -e 's#"\.\./pkg/#"../../pkg-lite/#' -e 's#"\.\./ranks/#"../../ranks/#' dist/lite/wasm.js dist/lite/wasm.d.ts
sed -i -e 's#"\./storage/#"../storage/#' dist/lite/*.js dist/lite/*.d.ts
echo 'export * from "../errors.js";' > dist/lite/errors.js
echo 'export * from "../errors.js";' > dist/lite/errors.d.ts
if grep -lE '"\.\./(pkg|ranks)/' dist/lite/*; then echo "build: dist/lite/ still refers to the full build (above)" >&2; exit 1; fi
echo "build: dist/ $(cd dist && echo *.js) cli/ storage/ lite/"
