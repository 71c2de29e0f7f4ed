#!/bin/sh
# bench/run.sh [N] [engines | onerun]: the db-benchmark groupby (q1..q10) and join (j1..j5) questions on
# framed (engine time and end to end over HTTP), DuckDB, Polars and pandas, on the same CSV files
# and 2 threads (pandas: 1). Default N = 1e7. See bench/README.md.
#   1. installs what is missing: the peers from bench/package-lock.json (npm ci), pandas
#      (apt-get install python3-pandas), wrk (apt-get install wrk, for bench/load/run.sh), perf
#      (apt-get install linux-perf, optional), and builds framed Release into build-rel/;
#   2. generates the tables into bench/data/ (bench/datagen.c, seeded; skipped when present);
#   3. runs bench/bench.mjs: every engine, checks, bench/results/<N>.{json,md}, bench/RESULTS.md;
#      or, with "onerun" as the second argument, bench/onerun.mjs: framed, DuckDB and Polars in one
#      run, interleaved question by question (REPS=5 repetitions; PHASES=groupby for groupby only),
#      bench/results/onerun-<N>.{json,md}, bench/RESULTS.md.
set -e
N=${1:-1e7}
ENGINES=${2:-duckdb,polars,pandas,framed}
BENCH=$(cd "$(dirname "$0")" && pwd)
ROOT=$(dirname "$BENCH")
DATA=${BENCH_DATA_DIR:-$BENCH/data}
cd "$ROOT"
mkdir -p "$DATA"

apt_install() {
    if [ -z "$APT_UPDATED" ]; then apt-get update -qq; APT_UPDATED=1; fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}
command -v node >/dev/null || apt_install nodejs npm
command -v cmake >/dev/null || apt_install cmake
if [ ! -d "$BENCH/node_modules/@duckdb/node-api" ] || [ ! -d "$BENCH/node_modules/nodejs-polars" ] ||
   [ "$BENCH/package-lock.json" -nt "$BENCH/node_modules/.package-lock.json" ]; then
    echo "== npm ci --prefix bench" >&2
    npm ci --prefix "$BENCH" --no-audit --no-fund --loglevel=error
fi
[ "$ENGINES" = onerun ] || /usr/bin/python3 -c 'import pandas' 2>/dev/null || { echo "== apt-get install python3-pandas" >&2; apt_install python3-pandas; }
command -v wrk >/dev/null || apt_install wrk   # bench/load/run.sh drives it
command -v perf >/dev/null || apt_install linux-perf || echo "(no perf: profiles skipped)" >&2

echo "== build framed (Release)" >&2
cmake -S . -B build-rel -DCMAKE_BUILD_TYPE=Release -DFRAMED_NATIVE=ON >/dev/null
cmake --build build-rel -j2 --target framed >/dev/null

cc -O2 -o "$DATA/datagen" "$BENCH/datagen.c" -lm
NN=$(node -e "import('$BENCH/engines/common.mjs').then(m => console.log(m.pretty(Math.round(Number('$N')))))")
if [ ! -f "$DATA/.done-$NN" ]; then
    echo "== generate the tables for N = $NN into $DATA" >&2
    "$DATA/datagen" "$N" "$DATA"
    touch "$DATA/.done-$NN"
fi
if [ "$ENGINES" = onerun ]; then exec node "$BENCH/onerun.mjs" "$N" "$DATA"; fi
exec node "$BENCH/bench.mjs" "$N" "$DATA" "$ENGINES"
