#!/bin/sh
# bench/load/run.sh [load.mjs flags]: framed serve under wrk over a mix of endpoints, 2 rounds
# of 60 s with 64 connections by default (--duration S, --connections N, --rounds N, ...; see
# bench/load/load.mjs). Installs wrk (Debian's package) and Node when missing, builds framed
# Release into build-rel/ like bench/run.sh, then writes bench/results/load.{json,md} and the
# "Load" section of bench/RESULTS.md. Exits non-zero when a round had errors.
set -e
LOAD=$(cd "$(dirname "$0")" && pwd)
ROOT=$(dirname "$(dirname "$LOAD")")
cd "$ROOT"

apt_install() {
    if [ -z "$APT_UPDATED" ]; then apt-get update -qq; APT_UPDATED=1; fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}
command -v wrk >/dev/null || { echo "== apt-get install wrk" >&2; apt_install wrk; }
command -v node >/dev/null || apt_install nodejs npm
command -v cmake >/dev/null || apt_install cmake

echo "== build framed (Release)" >&2
cmake -S . -B build-rel -DCMAKE_BUILD_TYPE=Release -DFRAMED_NATIVE=ON >/dev/null
cmake --build build-rel -j2 --target framed >/dev/null
exec node "$LOAD/load.mjs" "$@"
