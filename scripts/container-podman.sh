#!/usr/bin/env bash
# container-podman.sh: podman with the settings framed's scripts and tests use,
# then the arguments as given. Nothing machine-wide is read or changed:
#   CONTAINERS_CONF=docker/podman/containers.conf: default_ulimits = [] (the
#     default ulimits need CAP_SYS_RESOURCE, which our machines lack), runtime
#     runc, host networking (the tests use loopback only);
#   storage of its own: --storage-driver ${FRAMED_PODMAN_STORAGE_DRIVER:-overlay}
#     (vfs where overlay cannot mount, e.g. inside another container) with
#     --root ${FRAMED_PODMAN_ROOT:-${XDG_CACHE_HOME:-$HOME/.cache}/framed/podman-DRIVER},
#     so the images stay cached between runs and never clash with the
#     machine's own podman storage or its driver.
# usage: scripts/container-podman.sh PODMAN-ARGS...   (e.g. images, ps -a, logs NAME)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export CONTAINERS_CONF="$root/docker/podman/containers.conf"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/framed"
driver="${FRAMED_PODMAN_STORAGE_DRIVER:-overlay}"
# One root per driver: podman refuses a root made with another driver.
storage="${FRAMED_PODMAN_ROOT:-$cache/podman-$driver}"
runroot="${FRAMED_PODMAN_RUNROOT:-${TMPDIR:-/tmp}/framed-podman-run-$(id -u)-$driver}"
mkdir -p "$storage" "$runroot"
# FRAMED_PODMAN_RUNTIME names another OCI runtime than containers.conf's runc
# (e.g. crun; /bin/false shows what the tests do where none can run).
runtime=()
if [ -n "${FRAMED_PODMAN_RUNTIME:-}" ]; then
    runtime=(--runtime "$FRAMED_PODMAN_RUNTIME")
fi
exec podman --root "$storage" --runroot "$runroot" "${runtime[@]}" \
    --storage-driver "$driver" "$@"
