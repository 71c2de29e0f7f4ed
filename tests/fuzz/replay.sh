#!/bin/sh
# replay.sh: runs a fuzz target once on every file of a regression directory
# (inputs that once crashed, hung or leaked): fails if any of them still does.
# usage: replay.sh <fuzz-binary> <dir>   (a missing or empty dir passes)
set -eu
bin="$1"
dir="$2"
[ -d "$dir" ] || exit 0
set -- "$dir"/*
[ -e "$1" ] || exit 0
exec "$bin" -timeout=10 -rss_limit_mb=2048 "$@"
