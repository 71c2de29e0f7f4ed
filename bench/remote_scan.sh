#!/bin/sh
# bench/remote_scan.sh [N] [RUNS]: builds framed (Release), generates the db-benchmark groupby
# table for N (default 1e7) into bench/data/ when absent, and runs bench/remote_scan.mjs: a scan
# with a worker reading locally vs by HTTP Range from the coordinator, side by side.
set -eu
N=${1:-1e7}
RUNS=${2:-3}
BENCH=$(cd "$(dirname "$0")" && pwd)
ROOT=$(dirname "$BENCH")
DATA="$BENCH/data"
mkdir -p "$DATA"
cd "$ROOT"
cmake -S . -B build-rel -DCMAKE_BUILD_TYPE=Release -DFRAMED_NATIVE=ON >/dev/null
cmake --build build-rel -j2 --target framed >/dev/null
NN=$(node -e "import('$BENCH/engines/common.mjs').then(m => console.log(m.pretty(Math.round(Number('$N')))))")
if [ ! -f "$DATA/G1_${NN}_1e2_0_0.csv" ]; then
    cc -O2 -o "$DATA/datagen" "$BENCH/datagen.c" -lm
    "$DATA/datagen" "$N" "$DATA" groupby
fi
FRAMED_BIN="$ROOT/build-rel/framed" exec node "$BENCH/remote_scan.mjs" "$N" "$DATA" "$RUNS"
