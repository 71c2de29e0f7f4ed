#!/usr/bin/env bash
# container-image.sh: builds framed's container images with podman, where no
# registry can be pulled from: the Debian base from debootstrap, then
# docker/Dockerfile and docker/redis/Dockerfile. Idempotent: each step is
# skipped when its result is there, and podman's layer cache makes a rebuild
# of unchanged sources quick. Serialized by a lock, so tests may call it at once.
#
#   1. the base, tagged debian:bookworm and debian:bookworm-slim (the names
#      the Dockerfiles' FROM lines use): reused if podman has it; else imported
#      from the cached tarball ${XDG_CACHE_HOME:-$HOME/.cache}/framed/
#      debian-bookworm-minbase.tar; else `debootstrap --variant=minbase
#      bookworm` (needs root and deb.debian.org) and the tarball saved there;
#   2. framed:$TAG from docker/Dockerfile, framed-redis:$TAG from
#      docker/redis/Dockerfile: `podman build --pull=never --format docker
#      --network host` (docker format keeps the HEALTHCHECK); both also
#      tagged with the project's version (0.1.0: the tag docker/k8s/ uses).
#
# usage: scripts/container-image.sh [--base-only] [--probe]
#   --base-only  only step 1
#   --probe      after step 1, check that podman can start a container at
#                all: exit 77 with a message if it cannot (tests skip on it)
# environment: FRAMED_IMAGE_TAG (default latest), FRAMED_PODMAN_STORAGE_DRIVER
# and FRAMED_PODMAN_RUNTIME (see container-podman.sh), DEBIAN_MIRROR (default
# http://deb.debian.org/debian)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
podman=("$root/scripts/container-podman.sh")

base_only=0
probe=0
for arg in "$@"; do
    case "$arg" in
    --base-only) base_only=1 ;;
    --probe) probe=1 ;;
    -h | --help)
        sed -n '2,24p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
        exit 0
        ;;
    *)
        echo "container-image.sh: unknown argument '$arg' (try --help)" >&2
        exit 2
        ;;
    esac
done

tag="${FRAMED_IMAGE_TAG:-latest}"
mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/framed"
tarball="$cache/debian-bookworm-minbase.tar"
log() { printf 'container-image: %s\n' "$*" >&2; }

if ! command -v podman >/dev/null 2>&1; then
    log "podman is not installed (scripts/deps.sh --test installs it)"
    exit 1
fi

mkdir -p "$cache"
exec 9>"$cache/container-image.lock"
flock 9

start_s=$SECONDS
has_image() { "${podman[@]}" image exists "$1"; }

# No registry is reachable, so an image exists here only if podman can import
# one: a podman that cannot import a one-file tarball (inside a chroot, say,
# whose root is no mount point: "remount /: invalid argument") cannot start a
# container at all.
import_probe() {
    local d rc=0
    d="$(mktemp -d)"
    echo probe >"$d/probe"
    tar -C "$d" -cf "$d.tar" probe
    "${podman[@]}" import "$d.tar" framed-probe:import >"$cache/probe.log" 2>&1 || rc=$?
    "${podman[@]}" rmi -f framed-probe:import >/dev/null 2>&1 || true
    rm -rf "$d" "$d.tar"
    return "$rc"
}

if has_image debian:bookworm && has_image debian:bookworm-slim; then
    log "base: debian:bookworm in podman's storage"
else
    if [ "$probe" = 1 ] && ! import_probe; then
        tr -d '\0' <"$cache/probe.log" >&2
        log "podman cannot import an image on this machine, so it cannot start a container"
        exit 77
    fi
    if [ ! -s "$tarball" ]; then
        if ! command -v debootstrap >/dev/null 2>&1; then
            log "debootstrap is not installed (scripts/deps.sh --test installs it)"
            exit 1
        fi
        if [ "$(id -u)" -ne 0 ]; then
            log "debootstrap needs root: run this once as root (the tarball is cached in $cache)"
            exit 1
        fi
        dir="$(mktemp -d "$cache/debootstrap.XXXXXX")"
        trap 'rm -rf "$dir"' EXIT
        log "base: debootstrap --variant=minbase bookworm ($mirror)"
        debootstrap --variant=minbase bookworm "$dir/root" "$mirror" >"$dir/log" 2>&1 || {
            tail -20 "$dir/log" >&2
            log "debootstrap failed (full log: $dir/log)"
            trap - EXIT
            exit 1
        }
        # What a registry's debian image leaves out too: package caches and lists.
        rm -rf "$dir"/root/var/cache/apt/archives/*.deb "$dir"/root/var/cache/apt/*.bin \
            "$dir"/root/var/lib/apt/lists/* "$dir"/root/var/log/*.log
        tar --numeric-owner -C "$dir/root" -cf "$tarball.tmp" .
        mv "$tarball.tmp" "$tarball"
        rm -rf "$dir"
        trap - EXIT
        log "base: saved $tarball ($(du -h "$tarball" | cut -f1))"
    fi
    log "base: podman import $tarball"
    "${podman[@]}" import --change 'CMD ["/bin/bash"]' "$tarball" debian:bookworm >/dev/null
    "${podman[@]}" tag debian:bookworm debian:bookworm-slim
fi

if [ "$probe" = 1 ]; then
    if ! "${podman[@]}" run --rm --network host --pull=never debian:bookworm true \
        >"$cache/probe.log" 2>&1; then
        tr -d '\0' <"$cache/probe.log" >&2
        log "podman cannot start a container on this machine"
        exit 77
    fi
fi
[ "$base_only" = 1 ] && exit 0

build() { # image dockerfile
    log "build $1 from $2"
    "${podman[@]}" build --pull=never --format docker --network host \
        -f "$2" -t "$1" . >"$cache/build-${1%%:*}.log" 2>&1 || {
        tail -30 "$cache/build-${1%%:*}.log" >&2
        log "podman build of $1 failed (full log: $cache/build-${1%%:*}.log)"
        exit 1
    }
}
build "framed:$tag" docker/Dockerfile
build "framed-redis:$tag" docker/redis/Dockerfile
# Also the project's version (CMakeLists.txt), the tag docker/k8s/ names.
version="$(sed -n 's/^project(framed VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)"
if [ -n "$version" ] && [ "$version" != "$tag" ]; then
    "${podman[@]}" tag "framed:$tag" "framed:$version"
    "${podman[@]}" tag "framed-redis:$tag" "framed-redis:$version"
fi
# The untagged build-stage images are the layer cache of the next build (a
# changed src/ shares all but its last layer): `container-podman.sh image
# prune` reclaims them.
log "done in $((SECONDS - start_s))s: framed:$tag $("${podman[@]}" image inspect -f '{{.Size}}' "framed:$tag") bytes"
