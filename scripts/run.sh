#!/usr/bin/env bash
# run.sh: the Quick start. Installs what is missing (scripts/deps.sh), builds
# framed (Release, into build/), puts the demo datasets into the data dir if
# they are not there yet, and runs `framed serve` in the foreground (Ctrl-C
# stops it) with the local runner and the embedded config store.
#
# Environment (all optional):
#   FRAMED_LISTEN     address to listen on     (default 127.0.0.1)
#   FRAMED_PORT       TCP port                 (default 8080)
#   FRAMED_DATA_DIR   datasets                 (default ./data)
#   FRAMED_STATE_DIR  pending config and store (default ./state)
#   BUILD_DIR         build tree               (default build)
# Any other FRAMED_* variable reaches the server unchanged.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

./scripts/deps.sh

build_dir="${BUILD_DIR:-build}"
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release
cmake --build "$build_dir" -j2 --target framed

listen="${FRAMED_LISTEN:-127.0.0.1}"
port="${FRAMED_PORT:-8080}"
data_dir="${FRAMED_DATA_DIR:-./data}"
state_dir="${FRAMED_STATE_DIR:-./state}"

# Demo datasets: each one copied in when absent; one already there is kept.
mkdir -p "$data_dir"
for f in scripts/demo/trips.csv scripts/demo/vendors.ndjson; do
    if [ ! -e "$data_dir/$(basename "$f")" ]; then
        cp "$f" "$data_dir/"
        echo "run: demo dataset $(basename "$f") copied into $data_dir"
    fi
done
mkdir -p "$state_dir"

host="$listen"
case "$host" in 0.0.0.0 | "::" | "[::]") host=127.0.0.1 ;; esac
base="http://$host:$port"
cat <<MSG

framed is starting on $base (Ctrl-C stops it)
  dashboard  $base/
  API        $base/v1/info   (contract: openapi.yaml)
  health     $base/livez  $base/readyz   metrics: $base/metrics

Try, from another shell in this folder (README.md has the whole tour):
  curl -s $base/v1/datasets
  curl -s -X POST $base/v1/dataframes -H 'content-type: application/json' \\
       -d @api/examples/dataframe-csv-groupby.json
  curl -s -X POST '$base/v1/queries?wait=30' -H 'content-type: application/json' \\
       -d @api/examples/query-plan.json

MSG

exec "$build_dir/framed" serve --listen "$listen" --port "$port" \
    --data-dir "$data_dir" --state-dir "$state_dir"
