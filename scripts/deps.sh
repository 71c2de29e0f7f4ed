#!/usr/bin/env bash
# deps.sh: installs what framed needs to build, run and test it, and only what
# is missing: Debian packages through apt-get (one `apt-get update` first, and
# only when something is missing), then the npm tooling through `npm ci` with
# the committed lock file when node_modules is absent or older than the lock.
# Safe to run again and again; needs root (or sudo) only to install.
#
# usage: scripts/deps.sh [--test]
#   --test   also the packages that only the tests need (Chromium for the
#            dashboard test, clang for the fuzz targets, podman for the
#            container tests)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

with_test=0
for arg in "$@"; do
    case "$arg" in
    --test) with_test=1 ;;
    -h | --help)
        sed -n '2,10p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
        exit 0
        ;;
    *)
        echo "deps.sh: unknown argument '$arg' (try --help)" >&2
        exit 2
        ;;
    esac
done

log() { printf 'deps: %s\n' "$*" >&2; }

# Build, run and test. gcc + make + libc6-dev rather than build-essential:
# the project is C only, so g++ and dpkg-dev would be dead weight.
packages=(
    gcc make libc6-dev cmake pkg-config
    libmicrohttpd-dev libjansson-dev libcurl4-openssl-dev libssl-dev
    libhiredis-dev libxxhash-dev libcmocka-dev libsqlite3-dev
    libsnappy-dev libzstd-dev liblz4-dev zlib1g-dev
    redis-server valgrind curl ca-certificates
)
# Only the tests: the dashboard test drives Debian's Chromium headless; the
# fuzz targets need clang with libFuzzer and the sanitizer runtimes; test.sh
# checks the C formatting with clang-format; the container tests
# (tests/container/) build and run the images with podman and runc on a
# debootstrap base (uidmap, slirp4netns and fuse-overlayfs for rootless
# podman) and check docker/compose.yaml with both compose tools; the metrics
# test checks both roles' /metrics with Prometheus's own promtool; the history test
# checks the SQLite file itself with the sqlite3 shell.
test_packages=(chromium fonts-liberation clang libclang-rt-14-dev clang-format
    podman runc uidmap slirp4netns fuse-overlayfs debootstrap podman-compose docker-compose
    prometheus sqlite3)

# Any Node.js >= 18 already on PATH will do (with its npm); else Debian's.
node_usable() {
    command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 &&
        node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 18 ? 0 : 1)' \
            >/dev/null 2>&1
}
if ! node_usable; then
    packages+=(nodejs npm)
fi
if [ "$with_test" = 1 ]; then
    packages+=("${test_packages[@]}")
fi

installed() {
    [ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" = "install ok installed" ]
}

missing=()
for p in "${packages[@]}"; do
    installed "$p" || missing+=("$p")
done

if [ "${#missing[@]}" -gt 0 ]; then
    sudo=()
    if [ "$(id -u)" -ne 0 ]; then
        if command -v sudo >/dev/null 2>&1; then
            sudo=(sudo)
        else
            log "missing packages: ${missing[*]}; run this script as root to install them"
            exit 1
        fi
    fi
    log "installing: ${missing[*]}"
    apt_opts=(-y -q -o DPkg::Lock::Timeout=600 -o Dpkg::Options::=--force-confdef
        -o Dpkg::Options::=--force-confold)
    export DEBIAN_FRONTEND=noninteractive
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get "${apt_opts[@]}" update
    # No recommends: none of the packages above needs its recommended ones
    # (valgrind's gdb, npm's toolchain for building native addons, Chromium's
    # setuid sandbox helper).
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get "${apt_opts[@]}" install \
        --no-install-recommends "${missing[@]}"
else
    log "Debian packages: all present"
fi

if ! node_usable; then
    log "no usable Node.js >= 18 with npm after installing; found: $(node --version 2>&1 || true)"
    exit 1
fi

# npm ci writes node_modules/.package-lock.json; a lock file newer than it
# means package-lock.json changed since the last install.
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
    log "npm ci (node $(node --version), npm $(npm --version))"
    # Let npm trust what the system trusts (a proxy's CA added with
    # update-ca-certificates, say), not only the CAs built into Node.js.
    if [ -z "${NODE_EXTRA_CA_CERTS:-}" ] && [ -r /etc/ssl/certs/ca-certificates.crt ]; then
        export NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt
    fi
    # Browsers come from Debian (chromium), never from a download at install.
    PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 PUPPETEER_SKIP_DOWNLOAD=1 \
        npm ci --no-audit --no-fund --loglevel=error
else
    log "node_modules: up to date"
fi
