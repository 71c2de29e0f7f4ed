#!/usr/bin/env bash
# container-podman.sh: podman with the settings framed's scripts and tests use,
# then the arguments as given. Nothing machine-wide is read or changed:
#   CONTAINERS_CONF=docker/podman/containers.conf: default_ulimits = [] (the
#     default ulimits need CAP_SYS_RESOURCE, which our machines lack), runtime
#     runc, host networking (the tests use loopback only);
#   storage of its own: --root ${FRAMED_PODMAN_ROOT:-${XDG_CACHE_HOME:-$HOME/.cache}/framed/podman}
#     with --storage-driver ${FRAMED_PODMAN_STORAGE_DRIVER:-overlay} (vfs where
#     overlay cannot mount, e.g. inside another container), so the images stay
#     cached between runs and never clash with the machine's own podman
#     storage or its driver.
# usage: scripts/container-podman.sh PODMAN-ARGS...   (e.g. images, ps -a, logs NAME)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export CONTAINERS_CONF="$root/docker/podman/containers.conf"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/framed"
storage="${FRAMED_PODMAN_ROOT:-$cache/podman}"
runroot="${FRAMED_PODMAN_RUNROOT:-${TMPDIR:-/tmp}/framed-podman-run-$(id -u)}"
mkdir -p "$storage" "$runroot"
exec podman --root "$storage" --runroot "$runroot" \
    --storage-driver "${FRAMED_PODMAN_STORAGE_DRIVER:-overlay}" "$@"
