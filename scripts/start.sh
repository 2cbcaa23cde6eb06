#!/usr/bin/env bash
# `npm start`: builds the package (scripts/build.sh installs the tools it needs), then the demo
# (scripts/build-demo.sh: www's dependencies, vite build), and serves the built demo on localhost
# until Ctrl+C. Arguments go to www/serve.mjs: --port N (default 4173, the next free one if taken),
# --host H (default 127.0.0.1).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
bash scripts/build-demo.sh
exec node www/serve.mjs "$@"
