#!/usr/bin/env bash
# Run test files (default: the whole suite) against the package built with
# AddressSanitizer and UndefinedBehaviorSanitizer (gcc), R itself unchanged:
# the sanitizer runtimes are preloaded into Rscript.
#
# usage: bash tools/asan.sh [test-file.R ...]
#
# Installs into .lib-asan/ (src/ is cleaned before and after, so the next
# normal build does not pick up instrumented objects). Leak detection is off:
# R itself holds memory until exit. Exit status: non-zero when a test fails
# or a sanitizer reports.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
lib=$repo/.lib-asan
mkdir -p "$lib"
mv=$(mktemp)
trap 'rm -f "$mv"; rm -f "$repo"/src/*.o "$repo"/src/*.so' EXIT
cat >"$mv" <<'MV'
CFLAGS = -g -O1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined
LDFLAGS = -fsanitize=address,undefined
MV
rm -f src/*.o src/*.so
R_MAKEVARS_USER=$mv R CMD INSTALL --no-test-load --no-multiarch -l "$lib" . >"$lib/install.log" 2>&1 ||
  { tail -n 30 "$lib/install.log"; exit 2; }
pre="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libubsan.so)"
files=("$@")
[ "${#files[@]}" -gt 0 ] || files=(tests/testthat/test-*.R)
status=0
for f in "${files[@]}"; do
  [ -f "$f" ] || f=tests/testthat/$f
  echo "asan: $f"
  log="$lib/$(basename "$f").log"
  if ! LD_PRELOAD="$pre" ASAN_OPTIONS=detect_leaks=0:allocator_may_return_null=1 \
       UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 R_LIBS="$lib" NOT_CRAN=true \
       ZARR_FIXTURES_DIR="${ZARR_FIXTURES_DIR:-$repo/../shared/fixtures}" \
       Rscript -e "r <- as.data.frame(testthat::test_file('$f', package = 'zarr', load_package = 'installed', reporter = 'summary')); if (sum(r\$failed) > 0 || any(r\$error)) quit(status = 1)" \
       >"$log" 2>&1; then
    echo "asan: $f FAILED (see $log)"
    status=1
  fi
  if grep -q "ERROR: AddressSanitizer\|runtime error:" "$log"; then
    echo "asan: $f: sanitizer report (see $log)"
    status=1
  fi
done
exit $status
