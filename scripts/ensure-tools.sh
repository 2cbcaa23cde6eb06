#!/usr/bin/env bash
# Installs what building and testing context-compactor needs, skipping what is already there.
#   scripts/ensure-tools.sh            wasm32 target, rustfmt, clippy, wasm-bindgen-cli (= Cargo.lock), wasm-pack, npm packages
#   scripts/ensure-tools.sh --browser  the same, plus Debian's chromium (and a CJK font) for the browser tests
#   scripts/ensure-tools.sh --postgres the same, plus Debian's postgresql (its server binaries: the
#                                      tests start their own server, tests/support/postgres.mjs)
# Prints one line per tool: found / installed / skipped.
set -euo pipefail
cd "$(dirname "$0")/.."

want_browser=0
want_postgres=0
for arg in "$@"; do
  case "$arg" in
    --browser) want_browser=1 ;;
    --postgres) want_postgres=1 ;;
    *) echo "ensure-tools: unknown argument $arg" >&2; exit 2 ;;
  esac
done

export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
say() { printf 'ensure-tools: %-22s %s\n' "$1" "$2"; }

# cargo install with --locked first, then without (a registry mirror can lag behind a lock file).
cargo_install() {
  local crate=$1 version=${2:-}
  local args=(install "$crate")
  [[ -n $version ]] && args+=(--version "$version")
  if ! cargo "${args[@]}" --locked >"$tmp_log" 2>&1; then
    echo "ensure-tools: cargo install $crate ${version} --locked failed, retrying without --locked" >&2
    tail -n 5 "$tmp_log" >&2 || true
    cargo "${args[@]}" >"$tmp_log" 2>&1 || { cat "$tmp_log" >&2; echo "ensure-tools: cargo install $crate failed" >&2; exit 1; }
  fi
}
tmp_log=$(mktemp)
trap 'rm -f "$tmp_log"' EXIT

as_root() {
  if [[ $(id -u) -eq 0 ]]; then "$@"
  elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then sudo "$@"
  else return 1
  fi
}
apt_updated=0
apt_install() {
  command -v apt-get >/dev/null || return 1
  if [[ $apt_updated -eq 0 ]]; then
    as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq >"$tmp_log" 2>&1 || { cat "$tmp_log" >&2; return 1; }
    apt_updated=1
  fi
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >"$tmp_log" 2>&1 || { cat "$tmp_log" >&2; return 1; }
}

# 1. the wasm32 target
if rustup target list --installed | grep -qx wasm32-unknown-unknown; then
  say "wasm32 target" "found"
else
  rustup target add wasm32-unknown-unknown >"$tmp_log" 2>&1 || { cat "$tmp_log" >&2; exit 1; }
  say "wasm32 target" "installed"
fi

# 1b. rustfmt and clippy (scripts/test.sh gates formatting and lints)
for component in rustfmt clippy; do
  if rustup component list --installed 2>/dev/null | grep -q "^$component"; then
    say "$component" "found"
  else
    rustup component add "$component" >"$tmp_log" 2>&1 || { cat "$tmp_log" >&2; exit 1; }
    say "$component" "installed"
  fi
done

# 2. wasm-bindgen-cli at exactly the version of the wasm-bindgen crate in Cargo.lock
wbg_version=$(awk '/^\[\[package\]\]/{name=""} /^name = "wasm-bindgen"$/{name=$3} name!="" && /^version = /{gsub(/"/,"",$3); print $3; exit}' Cargo.lock)
if [[ -z $wbg_version ]]; then
  echo "ensure-tools: no wasm-bindgen package in Cargo.lock" >&2; exit 1
fi
have_wbg=$(wasm-bindgen --version 2>/dev/null | awk '{print $2}' || true)
if [[ $have_wbg == "$wbg_version" ]]; then
  say "wasm-bindgen-cli" "found $wbg_version"
else
  [[ -n $have_wbg ]] && echo "ensure-tools: wasm-bindgen $have_wbg does not match Cargo.lock's $wbg_version" >&2
  cargo_install wasm-bindgen-cli "$wbg_version"
  say "wasm-bindgen-cli" "installed $wbg_version"
fi

# 3. wasm-pack
if command -v wasm-pack >/dev/null; then
  say "wasm-pack" "found $(wasm-pack --version | awk '{print $2}')"
else
  cargo_install wasm-pack
  say "wasm-pack" "installed $(wasm-pack --version | awk '{print $2}')"
fi

# 4. npm packages, when node_modules is missing or does not match package.json (versions are pinned)
if [[ -d node_modules ]] && npm ls --depth=0 >/dev/null 2>&1; then
  say "npm packages" "found"
elif [[ -f package-lock.json ]]; then
  npm ci --no-audit --no-fund >"$tmp_log" 2>&1 || { cat "$tmp_log" >&2; exit 1; }
  say "npm packages" "installed (npm ci)"
else
  npm install --no-audit --no-fund >"$tmp_log" 2>&1 || { cat "$tmp_log" >&2; exit 1; }
  say "npm packages" "installed (npm install)"
fi

# 5. Debian's chromium, for the browser tests
if [[ $want_browser -eq 1 ]]; then
  if [[ -x /usr/bin/chromium ]]; then
    say "chromium" "found $(/usr/bin/chromium --version 2>/dev/null | awk '{print $2}')"
  elif apt_install chromium && [[ -x /usr/bin/chromium ]]; then
    say "chromium" "installed $(/usr/bin/chromium --version 2>/dev/null | awk '{print $2}') (Debian)"
  else
    echo "ensure-tools: /usr/bin/chromium is missing and could not be installed: run 'apt-get install chromium' as root" >&2
    exit 1
  fi
  # A Japanese font, so that the screenshots show the CJK test vectors instead of empty boxes
  # (3.5 MB; the tests pass without it).
  if [[ -n $(fc-list :lang=ja 2>/dev/null) ]]; then
    say "CJK font" "found"
  elif apt_install fonts-ipafont-gothic; then
    say "CJK font" "installed (Debian fonts-ipafont-gothic)"
  else
    say "CJK font" "skipped: screenshots will show CJK text as boxes"
  fi
fi

# 6. Debian's postgresql, for the PostgreSQL adapter's tests and bench/postgres.mjs (they run the
# server themselves, as the unprivileged postgres user when run as root)
if [[ $want_postgres -eq 1 ]]; then
  pg_initdb() { compgen -G "/usr/lib/postgresql/*/bin/initdb" | sort -V | tail -n 1; }
  if [[ -n $(pg_initdb) ]]; then
    say "postgresql" "found $("$(pg_initdb)" --version | awk '{print $3}')"
  elif apt_install postgresql && [[ -n $(pg_initdb) ]]; then
    say "postgresql" "installed $("$(pg_initdb)" --version | awk '{print $3}') (Debian)"
  else
    echo "ensure-tools: PostgreSQL's server (initdb) is missing and could not be installed: run 'apt-get install postgresql' as root" >&2
    exit 1
  fi
fi
