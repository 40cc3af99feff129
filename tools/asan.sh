#!/usr/bin/env bash
# The whole test suite against the package built with AddressSanitizer and
# UndefinedBehaviorSanitizer (gcc), R itself run with the sanitizer runtimes
# preloaded.
#
# usage: bash tools/asan.sh [test-file-filter]
#   e.g. bash tools/asan.sh            every test file
#        bash tools/asan.sh store      only test-*store*.R
#
# The package goes to .lib-asan/ (the normal build in .lib/ is untouched).
# Leak detection is off: R itself does not free everything at exit. Any
# sanitizer report fails the run (exit 1); so does a failing test.
# Takes about 3 times as long as tools/test.sh; run after changing C code.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"

lib="$repo/.lib-asan"
mkdir -p "$lib"
rm -rf "$lib"/00LOCK-*
mk=$(mktemp)
log=$(mktemp)
trap 'rm -f "$mk" "$log"' EXIT
cat > "$mk" <<'EOF'
CFLAGS = -g -O1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined -Wall -Wextra
LDFLAGS = -fsanitize=address,undefined
EOF
echo "asan: R CMD INSTALL into $lib"
R_MAKEVARS_USER="$mk" R CMD INSTALL --preclean --no-multiarch --no-test-load -l "$lib" "$repo" >/dev/null

preload="$(gcc -print-file-name=libasan.so):$(gcc -print-file-name=libubsan.so)"
fixtures="${ZARR_FIXTURES_DIR:-}"
if [ -z "$fixtures" ] && [ -d "$repo/../shared/fixtures" ]; then
  fixtures=$(cd "$repo/../shared/fixtures" && pwd)
fi
filter="${1:-}"
echo "asan: tests${filter:+ matching '$filter'}"
status=0
LD_PRELOAD="$preload" ASAN_OPTIONS="detect_leaks=0:abort_on_error=0" \
  UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
  R_LIBS="$lib${R_LIBS:+:$R_LIBS}" NOT_CRAN=true ZARR_FIXTURES_DIR="$fixtures" \
  ZARR_INTEROP_DIR="$repo/tools/interop" ZARR_FILTER="$filter" \
  Rscript -e '
f <- Sys.getenv("ZARR_FILTER")
res <- testthat::test_dir("tests/testthat", package = "zarr", load_package = "installed",
  filter = if (nzchar(f)) f else NULL, reporter = "summary", stop_on_failure = FALSE)
df <- as.data.frame(res)
bad <- sum(df$failed) + sum(df$error)
cat(sprintf("\n%d passed, %d failed, %d skipped\n", sum(df$passed), bad, sum(df$skipped)))
quit(status = if (bad > 0) 1 else 0)' 2>&1 | tee "$log" || status=$?
if grep -qE "ERROR: AddressSanitizer|runtime error:" "$log"; then
  echo "asan: the sanitizers reported errors (see above)"
  exit 1
fi
exit "$status"
