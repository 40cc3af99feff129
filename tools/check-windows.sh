#!/usr/bin/env bash
# Compile every C file of src/ for Windows (x86_64-w64-mingw32) with
# -Wall -Wextra and fail on any error or warning. Compile only: nothing is
# linked, so this proves the Windows code paths (src/compat.h and the _WIN32
# branches) are valid C for mingw-w64 and free of warnings, not that the DLL
# works.
#
# usage: bash tools/check-windows.sh        (needs gcc-mingw-w64-x86-64)
#
# What the compile sees, and where it is not Windows:
# * the C library and Win32 headers are mingw-w64's own; _UCRT is defined as
#   on Rtools 4.2 and later, with the defines src/Makevars.ucrt adds;
# * R's headers are the host's (R CMD config --cppflags): their Rconfig.h is
#   Linux's, which only affects a few HAVE_* macros the package does not use;
# * the codec, curl, OpenSSL and libxml2 headers are the host's, reached
#   through a folder holding only those headers (never the whole of
#   /usr/include, so that no glibc header can stand in for a missing Windows
#   one); libxml2's xmlversion.h is copied with its ICU and iconv switches
#   off, since the host's would include glibc's iconv.h and ICU's headers;
# * every optional library is on (HAVE_BLOSC, ...), as with Rtools, whose
#   pkg-config finds all of them (zfp: when a toolchain has it; the build
#   without it is the ZCODEC_MISSING row, which check-optional.sh covers).
# Exit status: 0 clean; 1 an error or warning; 2 the cross compiler is missing.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
say() { printf 'check-windows: %s\n' "$*"; }

cc=${MINGW_CC:-x86_64-w64-mingw32-gcc}
if ! command -v "$cc" >/dev/null 2>&1; then
  say "$cc not found (Debian: apt-get install gcc-mingw-w64-x86-64)"
  exit 2
fi

work=$(mktemp -d)
[ -n "${CHECK_KEEP:-}" ] || trap 'rm -rf "$work"' EXIT
inc="$work/include"
mkdir -p "$inc"

# the third-party headers, one by one
multi=$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
link_hdr() { # name: a header file or folder of /usr/include (or its multiarch folder)
  local src
  for src in "/usr/include/$1" "/usr/include/$multi/$1"; do
    if [ -e "$src" ]; then
      if [ -d "$src" ]; then
        mkdir -p "$inc/$1"
        cp -R "$src/." "$inc/$1/"
      else
        mkdir -p "$(dirname "$inc/$1")"
        cp "$src" "$inc/$1"
      fi
    fi
  done
}
for h in zstd.h zstd_errors.h zdict.h zlib.h zconf.h blosc.h blosc-export.h lz4.h lz4hc.h \
         bzlib.h lzma.h lzma zfp.h zfp curl openssl; do
  link_hdr "$h"
done
for h in zstd.h zlib.h blosc.h lz4.h bzlib.h lzma.h zfp.h curl/curl.h openssl/evp.h \
         openssl/configuration.h; do
  [ -e "$inc/$h" ] || { say "host header $h not found (install the -dev packages of tools/setup.sh)"; exit 1; }
done
if [ -d /usr/include/libxml2/libxml ]; then
  cp -R /usr/include/libxml2/libxml "$inc/libxml"
  sed -i -e 's/^#define LIBXML_ICU_ENABLED$/\/* ICU off for mingw *\//' \
         -e 's/^#define LIBXML_ICONV_ENABLED$/\/* iconv off for mingw *\//' "$inc/libxml/xmlversion.h"
else
  say "libxml2 headers not found (libxml2-dev)"
  exit 1
fi

r_cppflags=$(R CMD config --cppflags)
# the Windows-only defines are those of src/Makevars.ucrt
win_defs=$(sed -n 's/^ZARR_WIN_DEFS = //p' src/Makevars.ucrt)
[ -n "$win_defs" ] || { say "ZARR_WIN_DEFS not found in src/Makevars.ucrt"; exit 1; }
# shellcheck disable=SC2206
defs=(-DHAVE_BLOSC -DHAVE_LZ4 -DHAVE_BZ2 -DHAVE_LZMA -DHAVE_ZFP -DHAVE_LIBXML2 -D_UCRT $win_defs)
# shellcheck disable=SC2206
flags=(-std=gnu11 -O2 -Wall -Wextra $r_cppflags -idirafter "$inc" "${defs[@]}")

jobs=${CHECK_JOBS:-2}
say "$cc $(${cc} -dumpversion), ${jobs} jobs: every src/*.c"
mkdir -p "$work/obj" "$work/log"
# shellcheck disable=SC2016
printf '%s\n' src/*.c | xargs -P "$jobs" -I{} sh -c '
  f=$1; shift; cc=$1; shift; work=$1; shift
  b=$(basename "$f" .c)
  "$cc" "$@" -c "$f" -o "$work/obj/$b.o" > "$work/log/$b.txt" 2>&1 || echo "exit status $?" >> "$work/log/$b.txt"
' sh {} "$cc" "$work" "${flags[@]}"

bad=0
for f in src/*.c; do
  b=$(basename "$f" .c)
  if [ -s "$work/log/$b.txt" ]; then
    bad=$((bad + 1))
    cat "$work/log/$b.txt"
  fi
done
n=$(printf '%s\n' src/*.c | wc -l)
if [ "$bad" -gt 0 ]; then
  say "$bad of $n files gave errors or warnings for x86_64-w64-mingw32"
  exit 1
fi
say "all $n files compile cleanly for x86_64-w64-mingw32"
