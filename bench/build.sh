#!/bin/sh
# Builds the bench programs against a release build of the library:
#   cmake -S . -B build-rel -DCMAKE_BUILD_TYPE=Release && cmake --build build-rel -j2
#   bench/build.sh && bench/run.sh 1e7 && build-rel/bench_csv_load bench/data/G1_1e7_1e2_0_0.csv
set -e
cd "$(dirname "$0")/.."
cc -O2 -std=c11 -D_GNU_SOURCE -Isrc bench/bench_csv_load.c build-rel/libframed_core.a \
    $(pkg-config --libs jansson libmicrohttpd libcurl libcrypto hiredis libxxhash) -lpthread -lm \
    -o build-rel/bench_csv_load
