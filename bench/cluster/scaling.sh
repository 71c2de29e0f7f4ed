#!/bin/sh
# bench/cluster/scaling.sh [N] [setups]: the db-benchmark groupby and join questions on framed's
# local runner and on 1, 2 and 3 workers on loopback (setups default local,1,2,3), each process
# --threads 2. N defaults to 1e7 (1e6 for a quick run). Then the propagation benchmark
# (PROPAGATION=0 skips it), and bench/cluster/RESULTS.md from both. See bench/cluster/README.md.
#   1. builds framed Release into build-rel/ (as bench/run.sh does);
#   2. generates the tables with bench/datagen.c into bench/data/ (BENCH_DATA_DIR moves it;
#      skipped when bench/data/.done-<N> exists: the same files and marker as bench/run.sh);
#   3. runs bench/cluster/scaling.mjs (every process started and stopped by its PID).
# NET=tbf (as root): each worker in its own network namespace behind a veth shaped by tbf
# 10 Gbit/s (bench/cluster/netns.sh; scaling.mjs builds it and removes it, and this script
# removes whatever is left on exit, Ctrl-C or SIGTERM); the files are results/scaling-<N>-tbf.*.
set -e
N=${1:-1e7}
SETUPS=${2:-local,1,2,3}
HERE=$(cd "$(dirname "$0")" && pwd)
BENCH=$(dirname "$HERE")
ROOT=$(dirname "$BENCH")
DATA=${BENCH_DATA_DIR:-$BENCH/data}
cd "$ROOT"
mkdir -p "$DATA"
case "${NET:-loopback}" in
    loopback) ;;
    tbf)
        [ "$(id -u)" = 0 ] || { echo "NET=tbf needs root (ip netns, ip link, tc)" >&2; exit 2; }
        command -v ip >/dev/null && command -v tc >/dev/null || { echo "NET=tbf needs ip and tc (iproute2)" >&2; exit 2; }
        trap 'sh "$HERE/netns.sh" down' EXIT
        trap 'exit 130' INT TERM
        ;;
    *) echo "NET=${NET}: loopback (default) or tbf" >&2; exit 2 ;;
esac

command -v node >/dev/null || { apt-get update -qq; DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs >/dev/null; }
echo "== build framed (Release)" >&2
cmake -S . -B build-rel -DCMAKE_BUILD_TYPE=Release -DFRAMED_NATIVE=ON >/dev/null
cmake --build build-rel -j2 --target framed >/dev/null

NN=$(node -e "import('$BENCH/engines/common.mjs').then(m => console.log(m.pretty(Math.round(Number('$N')))))")
if [ ! -f "$DATA/.done-$NN" ]; then
    echo "== generate the tables for N = $NN into $DATA (bench/datagen.c)" >&2
    cc -O2 -o "$DATA/datagen" "$BENCH/datagen.c" -lm
    "$DATA/datagen" "$N" "$DATA"
    touch "$DATA/.done-$NN"
fi
echo "== uptime: $(uptime)" >&2
node "$HERE/scaling.mjs" "$N" "$DATA" "$SETUPS"
if [ "${PROPAGATION:-1}" != 0 ]; then
    node "$HERE/propagation.mjs" "${M:-5000}" || echo "(propagation: the check failed, see above)" >&2
fi
node "$HERE/report.mjs"
