#!/usr/bin/env bash
# fuzz.sh: long libFuzzer runs of the targets in tests/fuzz/ (built in
# build-fuzz/ with clang, see cmake/fuzz.cmake), niced so they can run beside
# other work. Each target starts from its seed corpus (tests/fuzz/corpus/<t>,
# only read) and keeps what it finds in build-fuzz/fuzz-corpus/<t>; crashes,
# timeouts and OOMs are written to build-fuzz/fuzz-artifacts/<t>/ (copy a
# minimized one into tests/fuzz/regress/<t>/ to replay it in scripts/test.sh).
# The last line per target is "fuzz: <t> <execs> execs in <s> s (<execs/s>/s)".
#
# usage: scripts/fuzz.sh [-k] [-r RUNS] [-t SECONDS] [-j JOBS] [TARGET...]
#   -k          keep going past findings (libFuzzer's fork mode, one worker):
#               each is written to the artifacts dir and the run goes on
#   -r RUNS     executions per target (default 10000000)
#   -t SECONDS  stop a target after this long instead (0 = no limit, default)
#   -j JOBS     parallel libFuzzer jobs per target (default 1)
#   TARGET      config plan expr csv ndjson serde task http accept (default: all)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root="$(pwd)"

runs=10000000
seconds=0
jobs=1
keep=0
while getopts "kr:t:j:h" opt; do
    case "$opt" in
    k) keep=1 ;;
    r) runs="$OPTARG" ;;
    t) seconds="$OPTARG" ;;
    j) jobs="$OPTARG" ;;
    *)
        sed -n '2,18p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
        exit 2
        ;;
    esac
done
shift $((OPTIND - 1))
for n in "$runs" "$seconds" "$jobs"; do
    [[ "$n" =~ ^[0-9]+$ ]] || {
        echo "fuzz.sh: -r, -t and -j take whole numbers" >&2
        exit 2
    }
done

targets=("$@")
if [ "${#targets[@]}" -eq 0 ]; then
    for f in tests/fuzz/fuzz_*.c; do
        t="$(basename "$f" .c)"
        targets+=("${t#fuzz_}")
    done
fi

CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFRAMED_FUZZ=ON >/dev/null
cmake --build build-fuzz -j2 --target fuzz >/dev/null

# The same per-target input limits as the CTest smoke tests.
max_len() {
    sed -n "s/^set(fuzz_max_len_$1 \([0-9]*\))$/\1/p" cmake/fuzz.cmake
}

export FRAMED_SOURCE_DIR="$root"
rc=0
for t in "${targets[@]}"; do
    bin="build-fuzz/fuzz_$t"
    [ -x "$bin" ] || {
        echo "fuzz.sh: no target '$t'" >&2
        exit 2
    }
    work="build-fuzz/fuzz-corpus/$t"
    art="build-fuzz/fuzz-artifacts/$t"
    log="build-fuzz/fuzz-$t.log"
    mkdir -p "$work" "$art"
    len="$(max_len "$t")"
    opts=(-timeout=10 -rss_limit_mb=2048 "-max_len=${len:-4096}" -print_final_stats=1
        "-artifact_prefix=$art/" "-runs=$runs")
    [ -f "tests/fuzz/dict/$t.dict" ] && opts+=("-dict=tests/fuzz/dict/$t.dict")
    [ "$seconds" -gt 0 ] && opts+=("-max_total_time=$seconds")
    [ "$jobs" -gt 1 ] && opts+=("-jobs=$jobs" "-workers=$jobs")
    [ "$keep" = 1 ] && opts+=(-fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1)
    start=$SECONDS
    trc=0
    nice -n 19 "$bin" "${opts[@]}" "$work" "tests/fuzz/corpus/$t" >"$log" 2>&1 || trc=$?
    secs=$((SECONDS - start))
    if [ "$keep" = 1 ]; then # the fork parent's last "#<execs>: cov: ..." line
        execs="$(sed -n 's/^#\([0-9]*\): cov:.*/\1/p' "$log" | tail -1)"
        found="$(find "$art" -type f | wc -l)"
        echo "fuzz: $t kept going: $found artifact(s) in $art/" >&2
    else
        execs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" |
            awk '{s += $1} END {print s + 0}')"
    fi
    execs="${execs:-0}"
    rate=$((execs / (secs > 0 ? secs : 1)))
    if [ "$trc" -ne 0 ]; then
        rc=1
        echo "fuzz: $t FAILED (exit $trc): see $log and $art/" >&2
    fi
    echo "fuzz: $t $execs execs in $secs s ($rate/s)"
done
exit "$rc"
