#!/usr/bin/env bash
# test.sh: installs what is missing (scripts/deps.sh --test), builds two trees
# and runs every test:
#   build/       plain RelWithDebInfo framed, run under valgrind by the
#                valgrind_lifecycle test (a leak check of a lifecycle run)
#   build-asan/  -Werror, AddressSanitizer + UBSan: every unit and integration
#                test runs against it
#   build-fuzz/  clang + libFuzzer: each fuzz target runs a few seconds and
#                replays its regression inputs (see the fuzz smoke block)
# then checks the C formatting (clang-format --dry-run -Werror), lints the
# HTTP contract (npm run lint:api) and runs CTest in
# build-asan/. A Redis server for the tests is started on a free loopback
# port (FRAMED_TEST_REDIS_URL) and stopped by its PID on exit. The last lines
# printed are CTest's summary; the exit code is non-zero on any failure.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root="$(pwd)"

start_s=$SECONDS
step() { printf '\n==> %s (%ds)\n' "$*" "$((SECONDS - start_s))"; }

step "dependencies"
./scripts/deps.sh --test

step "build/ (RelWithDebInfo, for valgrind)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build build -j2 --target framed

step "build-asan/ (-Werror, address,undefined)"
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFRAMED_WERROR=ON \
    -DFRAMED_SANITIZE=address,undefined -DFRAMED_VALGRIND_BINARY="$root/build/framed"
cmake --build build-asan -j2

step "build-fuzz/ (clang, libFuzzer + address,undefined; see the fuzz smoke below)"
CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFRAMED_FUZZ=ON
cmake --build build-fuzz -j2 --target fuzz

step "clang-format (the checked-in .clang-format, over src/, tests/unit/, tests/fuzz/)"
find src tests/unit tests/fuzz -name '*.[ch]' -print0 | sort -z |
    xargs -0 clang-format --dry-run -Werror

step "lint the HTTP contract"
REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true npm run --silent lint:api

# A free loopback port: bind port 0 and read back what the kernel chose.
free_port() {
    node -e 'const s = require("net").createServer();
s.listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); });'
}

redis_pid=""
stop_services() {
    if [ -n "$redis_pid" ]; then
        kill "$redis_pid" 2>/dev/null || true
        wait "$redis_pid" 2>/dev/null || true
        redis_pid=""
    fi
}
trap stop_services EXIT
trap 'exit 130' INT TERM

step "services"
redis_port="$(free_port)"
redis-server --bind 127.0.0.1 --port "$redis_port" --save '' --appendonly no \
    --daemonize no --loglevel warning >build-asan/redis-test.log 2>&1 &
redis_pid=$!
for _ in $(seq 1 100); do
    if redis-cli -h 127.0.0.1 -p "$redis_port" ping >/dev/null 2>&1; then
        break
    fi
    if ! kill -0 "$redis_pid" 2>/dev/null; then
        echo "test.sh: redis-server did not start:" >&2
        cat build-asan/redis-test.log >&2
        exit 1
    fi
    sleep 0.1
done
export FRAMED_TEST_REDIS_URL="redis://127.0.0.1:$redis_port/0"
echo "redis-server pid $redis_pid on $FRAMED_TEST_REDIS_URL"

export ASAN_OPTIONS=detect_leaks=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

rc=0
# ---- fuzz smoke (tests/fuzz/, cmake/fuzz.cmake) ----------------------------
# build-fuzz/: clang, libFuzzer targets over framed_core built with
# -fsanitize=fuzzer-no-link,address,undefined. Each target fuzzes for
# FRAMED_FUZZ_SECONDS (5) from its seed corpus, then replays its regression
# inputs (tests/fuzz/regress/); a crash, leak, timeout or OOM fails the run.
step "fuzz smoke"
ctest --test-dir build-fuzz -L fuzz --output-on-failure -j2 || rc=$?
# ---- end of fuzz smoke -------------------------------------------------------

# The whole suite last, so its summary closes the output. It includes the
# container tests (label container, tests/container/): they build framed's
# images with podman (scripts/container-image.sh, which sets CONTAINERS_CONF
# and podman's storage itself) and run a server and a cluster of containers.
step "ctest"
ctest --test-dir build-asan --output-on-failure -j2 || rc=$?

stop_services
exit "$rc"
