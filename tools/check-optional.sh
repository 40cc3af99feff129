#!/usr/bin/env bash
# Install the package once with each optional library made unavailable
# (c-blosc, lz4, bzip2, liblzma, libzfp, libxml2: configure is given a *_LIBS that
# names a library that does not exist, so its link test fails as on a system
# without it) and run the codec tests against each build: they must pass,
# skipping what the build lacks or expecting zarr_error_unsupported.
#
# usage: bash tools/check-optional.sh [BLOSC LZ4 BZ2 LZMA ZFP XML]   (default: all)
# Each build goes into a temporary library, from a copy of this checkout, so
# the checkout's own src/*.o and .lib/ are left alone. Objects of files that
# do not depend on an optional library are compiled once and reused.
# Exit status: 0 every variant installed and its tests passed; 1 otherwise.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
say() { printf 'check-optional: %s\n' "$*"; }

variants=("$@")
[ "${#variants[@]}" -gt 0 ] || variants=(BLOSC LZ4 BZ2 LZMA ZFP XML)
# the tests of the codecs and of what libxml2 provides
filter='^(capabilities|codecs|codecs-registered|lzma|registry-zfp|stores-xml|stores-codec-pieces)$'

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/pkg"
git ls-files -co --exclude-standard -z | grep -zv '^tools/\(interop\|s3server\|azurite\|icechunk\)/' |
  tar -cf - --null -T - | tar -xf - -C "$work/pkg"
rm -f "$work/pkg"/src/*.o "$work/pkg"/src/*.so "$work/pkg/src/Makevars"

export MAKEFLAGS="${MAKEFLAGS:--j2}" ZARR_FILTER="$filter"
failed=()
for v in "${variants[@]}"; do
  case $v in
    BLOSC) lib=c-blosc ;; LZ4) lib=liblz4 ;; BZ2) lib=libbz2 ;; LZMA) lib=liblzma ;; ZFP) lib=libzfp ;; XML) lib=libxml2 ;;
    *) say "unknown variant $v (BLOSC LZ4 BZ2 LZMA ZFP XML)"; exit 1 ;;
  esac
  say "---- without $lib (${v}_LIBS=-lzarr_absent_$v)"
  # objects that depend on an optional library are rebuilt for each variant
  grep -lE 'HAVE_(BLOSC|LZ4|BZ2|LZMA|ZFP|LIBXML2)' "$work/pkg"/src/*.c | sed 's/\.c$/.o/' | xargs rm -f
  rm -f "$work/pkg"/src/*.so
  mkdir -p "$work/lib-$v"
  log="$work/install-$v.log"
  if ! env "${v}_LIBS=-lzarr_absent_$v" R CMD INSTALL --no-multiarch --no-docs --no-html \
        -l "$work/lib-$v" "$work/pkg" > "$log" 2>&1; then
    tail -n 30 "$log"
    say "without $lib: the install FAILED"
    failed+=("$v")
    continue
  fi
  if ! grep -q "^ \* $lib not found" "$log"; then
    grep -A3 'Optional libraries' "$log" || true
    say "without $lib: configure did not report $lib missing"
    failed+=("$v")
    continue
  fi
  status=0
  ZARR_LIB_ABSENT="$lib" R_LIBS="$work/lib-$v${R_LIBS:+:$R_LIBS}" Rscript -e '
    lib <- Sys.getenv("ZARR_LIB_ABSENT")
    caps <- zarr::zarr_capabilities()
    if (!is.na(caps$libraries$version[caps$libraries$library == lib]))
      stop("zarr_capabilities() lists ", lib, " although the build was made without it")
    res <- as.data.frame(testthat::test_dir("tests/testthat", filter = Sys.getenv("ZARR_FILTER"),
      package = "zarr", load_package = "installed", stop_on_failure = FALSE,
      reporter = testthat::SummaryReporter$new(show_praise = FALSE)))
    n_fail <- sum(res$failed) + sum(res$error)
    cat(sprintf("%d passed, %d failed, %d skipped\n", sum(res$passed), n_fail, sum(res$skipped)))
    quit(status = if (n_fail > 0) 1 else 0)
  ' || status=$?
  if [ "$status" -ne 0 ]; then
    say "without $lib: the codec tests FAILED"
    failed+=("$v")
  else
    say "without $lib: installed, codec tests passed"
  fi
done

if [ "${#failed[@]}" -gt 0 ]; then
  say "FAILED: ${failed[*]}"
  exit 1
fi
say "all variants passed: ${variants[*]}"
