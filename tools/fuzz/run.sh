#!/usr/bin/env bash
# Build the libFuzzer targets of the C core (no R needed) and run each.
#
# usage: bash tools/fuzz/run.sh [SECONDS] [TARGET...]
#   SECONDS  how long to fuzz each target (default 60)
#   TARGET   fuzz_chain fuzz_strings fuzz_shard fuzz_zip fuzz_keys fuzz_refplan fuzz_grid fuzz_xml fuzz_redact fuzz_icechunk fuzz_fbwrite fuzz_zv fuzz_json_scan (default: all)
#
# Needs clang with libFuzzer (Debian: clang, libclang-rt-14-dev or later) and
# the codec libraries' headers (as the package does). Targets are built with
# -fsanitize=fuzzer,address,undefined into tools/fuzz/build/; the seed corpus
# is made from ../shared/fixtures (ZARR_FIXTURES_DIR) by make_corpus.py, and
# what a run finds is kept in build/corpus-<target>/. A crash (or leak, or
# sanitizer report) leaves its input in build/ and makes this script fail.
set -euo pipefail

secs=${1:-60}
shift || true
targets=${*:-fuzz_chain fuzz_strings fuzz_shard fuzz_zip fuzz_keys fuzz_refplan fuzz_grid fuzz_xml fuzz_redact fuzz_icechunk fuzz_fbwrite fuzz_zv fuzz_json_scan}

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
src=$(cd "$here/../../src" && pwd)
build=$here/build
mkdir -p "$build"

cc=${CC_FUZZ:-}
if [ -z "$cc" ]; then
  for c in clang clang-19 clang-16 clang-14; do
    if command -v "$c" >/dev/null 2>&1; then cc=$c; break; fi
  done
fi
[ -n "$cc" ] || { echo "fuzz: clang not found" >&2; exit 2; }

flags=(-g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined
       -fno-sanitize-recover=undefined -Wall -Wextra -I"$src"
       -DHAVE_BLOSC -DHAVE_LZ4 -DHAVE_BZ2 -DHAVE_LZMA -DHAVE_ZFP -DHAVE_LIBXML2
       )
libs=(-lzstd -lz -lblosc -llz4 -lbz2 -llzma -lzfp -lpthread -lm)
# every codec file but codec_r.c (codecs written in R need libR)
codecs=()
for f in "$src"/codec_*.c; do
  case $(basename "$f") in codec_r.c) ;; *) codecs+=("$(basename "$f")") ;; esac
done
core=(zbuf.c compat.c "${codecs[@]}" strings.c slab.c keys.c dtype.c refplan.c redact.c zv_layout.c threads.c json_scan.c)

build_one() {
  local t=$1 extra=()
  local files=()
  for f in "${core[@]}"; do files+=("$src/$f"); done
  case $t in
    # store_zip.c (included by the target) reads through store_local.c and
    # includes zarr.h, hence R's headers; r_stubs.c stands in for libR
    fuzz_zip) extra=(-I"$rinc" "$src/store_local.c" "$src/fileio.c" "$here/r_stubs.c") ;;
    # xml.c parses with libxml2
    fuzz_xml) extra=("$src/xml.c" $(pkg-config --cflags --libs libxml-2.0 2>/dev/null || echo -I/usr/include/libxml2 -lxml2)) ;;
    # Icechunk objects: the flatbuffer reader and the object parsers
    fuzz_icechunk) extra=("$src/flatbuf.c" "$src/icechunk.c") ;;
    # the flatbuffer writer, read back by the reader
    fuzz_fbwrite) extra=("$src/flatbuf.c") ;;
  esac
  "$cc" "${flags[@]}" "${extra[@]}" "$here/$t.c" "${files[@]}" "${libs[@]}" -o "$build/$t"
}

rinc=${R_INCLUDE_DIR:-$(Rscript -e 'cat(R.home("include"))' 2>/dev/null || echo /usr/share/R/include)}

fixtures=${ZARR_FIXTURES_DIR:-$here/../../../shared/fixtures}
if [ ! -d "$build/seeds" ] && [ -d "$fixtures" ] && command -v python3 >/dev/null 2>&1; then
  python3 "$here/make_corpus.py" "$fixtures" "$build/seeds"
fi

status=0
for t in $targets; do
  echo "fuzz: building $t"
  build_one "$t"
  mkdir -p "$build/corpus-$t"
  seeds=()
  [ -d "$build/seeds/$t" ] && seeds=("$build/seeds/$t")
  # seeds kept in git (inputs no fixture holds, such as Icechunk objects)
  [ -d "$here/seeds/$t" ] && seeds+=("$here/seeds/$t")
  # inputs that once failed (kept in git), so that every run tries them again
  [ -d "$here/regressions/$t" ] && seeds+=("$here/regressions/$t")
  echo "fuzz: running $t for ${secs}s"
  # -rss_limit_mb bounds memory: a decompression bomb that gets through fails the run
  if ! (cd "$build" && ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 \
        UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        "./$t" -max_total_time="$secs" -rss_limit_mb=2048 -malloc_limit_mb=2048 \
        -timeout=20 -print_final_stats=1 "corpus-$t" "${seeds[@]}" 2>&1 | tee "$build/$t.log" | \
        grep -E "DONE|stat::number_of_executed_units|==[0-9]+==ERROR|SUMMARY|Test unit written" ;
        exit "${PIPESTATUS[0]}"); then
    echo "fuzz: $t FAILED (see tools/fuzz/build/$t.log)" >&2
    status=1
  fi
done
exit $status
