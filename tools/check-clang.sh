#!/usr/bin/env bash
# Compile every C file of src/ with clang -Wall -Wextra (syntax only), as
# Apple clang on macOS would, twice: with every optional library and with
# none (the HAVE_* branches and their stubs); fail on any warning or error.
# Linux headers stand in for macOS's: this catches clang's own warnings
# (e.g. -Wsometimes-uninitialized), not macOS-only API differences.
#
# usage: bash tools/check-clang.sh      (needs clang; exit 2 without it)
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
say() { printf 'check-clang: %s\n' "$*"; }

cc=${CLANG:-}
if [ -z "$cc" ]; then
  for c in clang clang-19 clang-16 clang-14; do
    if command -v "$c" >/dev/null 2>&1; then cc=$c; break; fi
  done
fi
[ -n "$cc" ] || { say "clang not found"; exit 2; }

# shellcheck disable=SC2207
base=(-std=gnu11 -fsyntax-only -Wall -Wextra $(R CMD config --cppflags)
      $(pkg-config --cflags libcurl libxml-2.0 2>/dev/null || echo -I/usr/include/libxml2))
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for variant in all none; do
  defs=()
  [ "$variant" = all ] && defs=(-DHAVE_BLOSC -DHAVE_LZ4 -DHAVE_BZ2 -DHAVE_LZMA -DHAVE_LIBXML2)
  printf '%s\n' src/*.c | xargs -P "${CHECK_JOBS:-2}" -n 4 "$cc" "${base[@]}" "${defs[@]}" >>"$out" 2>&1 || true
done
if grep -qE 'warning:|error:' "$out"; then
  cat "$out"
  say "warnings or errors (above)"
  exit 1
fi
say "all of src/ is clean with $cc -Wall -Wextra, with and without the optional libraries"
