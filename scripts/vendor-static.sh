#!/usr/bin/env bash
# vendor-static.sh: copies the dashboard's libraries (pinned in package.json)
# from node_modules into static/vendor/, each beside its LICENSE, so the page
# needs no build step and no CDN. Run after `npm ci` when a pin changes; the
# dashboard test fails when a vendored file differs from node_modules' copy.
#
# usage: scripts/vendor-static.sh
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
nm="$root/node_modules"
out="$root/static/vendor"

# destination (relative to static/vendor) and source (relative to node_modules)
files=(
  "preact/preact.mjs preact/dist/preact.mjs"
  "preact/hooks.mjs preact/hooks/dist/hooks.mjs"
  "preact/LICENSE preact/LICENSE"
  "htm/htm.mjs htm/dist/htm.mjs"
  "htm/LICENSE htm/LICENSE"
  "uplot/uPlot.esm.js uplot/dist/uPlot.esm.js"
  "uplot/uPlot.min.css uplot/dist/uPlot.min.css"
  "uplot/LICENSE uplot/LICENSE"
)

for pair in "${files[@]}"; do
  read -r dest src <<<"$pair"
  if [ ! -f "$nm/$src" ]; then
    echo "vendor-static: $nm/$src is missing; run npm ci first" >&2
    exit 1
  fi
  mkdir -p "$(dirname "$out/$dest")"
  cp "$nm/$src" "$out/$dest"
done
echo "vendor-static: copied ${#files[@]} files into static/vendor"
