#!/usr/bin/env bash
# valgrind-framed.sh: runs the framed binary named by FRAMED_VALGRIND_TARGET
# under valgrind's leak checker, with this script's arguments. Integration
# tests start it in place of the binary (FRAMED_BIN): a definite or indirect
# leak, or any memory error, makes the exit code 99 instead of framed's own.
set -euo pipefail
: "${FRAMED_VALGRIND_TARGET:?FRAMED_VALGRIND_TARGET must name the framed binary to check}"
exec valgrind --quiet --leak-check=full --show-leak-kinds=definite,indirect \
    --errors-for-leak-kinds=definite,indirect --error-exitcode=99 --trace-children=no \
    "$FRAMED_VALGRIND_TARGET" "$@"
