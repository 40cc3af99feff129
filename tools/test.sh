#!/usr/bin/env bash
# Build, install and test the zarr R package from this checkout.
#
# usage: bash tools/test.sh           (what .ci/run does)
#
# 1. tools/setup.sh (skip with ZARR_SKIP_SETUP=true);
# 2. R CMD INSTALL into the private library .lib/ (prepended to R_LIBS);
# 3. the whole testthat suite against the installed package, then one line
#    "N passed, N failed, N skipped" (expectations; errors count as failed);
#    then tools/geozarr.sh: geozarr from CRAN installed against this zarr and
#    its tests run (skip with ZARR_GEOZARR=false; skipped outside CI when CRAN
#    cannot be reached); its failures are added to the failed count;
# 3c. when ZARR_PORTABILITY=true (the default when CI=true): every file of src/
#    compiled for Windows with mingw-w64 (tools/check-windows.sh) and with
#    clang, macOS's compiler (tools/check-clang.sh), and the
#    package installed once without each optional library with its codec
#    tests run (tools/check-optional.sh); a failure fails the run (status 1);
# 4. when ZARR_CHECK=true (the default when CI=true) and the tests passed:
#    R CMD build + R CMD check --as-cran --no-manual, failing on ERROR/WARNING.
#
# Environment given to the tests:
#   ZARR_INTEROP_DIR      tools/interop (zarrita.js in its node_modules)
#   ZARR_TESTSERVER       tools/testserver/server.js (the HTTP test server)
#   ZARR_S3SERVER         tools/s3server/proxy.js (s3rver behind a SigV4-checking proxy)
#   ZARR_FIXTURES_DIR     ../shared/fixtures, when that directory exists
#                         (a value already set in the environment wins)
#   ZARR_REQUIRE_INTEROP  true when CI=true: missing node/zarrita/fixtures fail
#   NOT_CRAN              true (skip_on_cran() tests run)
# R CMD check runs without these, as on CRAN.
#
# Exit status: 0 all passed; 1 a test failed or errored; 2 R CMD check gave
# an ERROR or WARNING; other non-zero: setup or installation failed.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"

say() { printf 'test: %s\n' "$*"; }

is_true() { case "${1:-}" in true|TRUE|True|1|yes) return 0 ;; *) return 1 ;; esac; }
ci=false
if is_true "${CI:-}"; then ci=true; fi
check=false
if is_true "${ZARR_CHECK:-$ci}"; then check=true; fi

# ---- 1. and 2. dependencies, then the package into the private library
# shellcheck source=tools/install.sh
. "$repo/tools/install.sh"

# ---- 3. test suite
export ZARR_INTEROP_DIR="$repo/tools/interop"
export ZARR_TESTSERVER="$repo/tools/testserver/server.js"
export ZARR_S3SERVER="$repo/tools/s3server/proxy.js"
if [ -z "${ZARR_FIXTURES_DIR:-}" ] && [ -d "$repo/../shared/fixtures" ]; then
  ZARR_FIXTURES_DIR=$(cd "$repo/../shared/fixtures" && pwd)
  export ZARR_FIXTURES_DIR
fi
if $ci; then export ZARR_REQUIRE_INTEROP="${ZARR_REQUIRE_INTEROP:-true}"; fi
export NOT_CRAN=true
say "ZARR_INTEROP_DIR=$ZARR_INTEROP_DIR"
say "ZARR_FIXTURES_DIR=${ZARR_FIXTURES_DIR:-(unset: ../shared/fixtures not found)}"
say "ZARR_REQUIRE_INTEROP=${ZARR_REQUIRE_INTEROP:-(unset)}"

summary_file=$(mktemp)
trap 'rm -f "$summary_file"' EXIT
test_status=0
ZARR_TEST_SUMMARY="$summary_file" Rscript -e '
res <- tryCatch(
  testthat::test_dir("tests/testthat", package = "zarr", load_package = "installed",
    reporter = testthat::ProgressReporter$new(show_praise = FALSE, max_failures = Inf),
    stop_on_failure = FALSE),
  error = function(e) e)
if (inherits(res, "error")) {
  cat("\nThe test run itself failed:", conditionMessage(res), "\n")
  n <- c(passed = 0, failed = 1, skipped = 0)
} else {
  df <- as.data.frame(res)
  n <- c(passed = sum(df$passed), failed = sum(df$failed) + sum(df$error),
         skipped = sum(df$skipped))
}
line <- sprintf("%d passed, %d failed, %d skipped", n[["passed"]], n[["failed"]], n[["skipped"]])
writeLines(line, Sys.getenv("ZARR_TEST_SUMMARY"))
quit(status = if (n[["failed"]] > 0) 1 else 0)
' || test_status=$?
summary=$(cat "$summary_file")
if [ -z "$summary" ]; then
  summary="0 passed, 1 failed, 0 skipped"
  echo "Rscript exited with status $test_status before reporting a summary"
fi
echo
echo "$summary"
if [ "$test_status" -ne 0 ]; then
  exit 1
fi

# ---- 3a. a package built on the zarr 1.0.0 API: geozarr's test suite
if is_true "${ZARR_GEOZARR:-true}"; then
  gz_file=$(mktemp)
  gz_status=0
  ZARR_GEOZARR_SUMMARY="$gz_file" bash tools/geozarr.sh || gz_status=$?
  if [ "$gz_status" -ne 0 ]; then
    gz_failed=$(sed -n 's/.* \([0-9][0-9]*\) failed,.*/\1/p' "$gz_file")
    [ -n "$gz_failed" ] && [ "$gz_failed" -gt 0 ] || gz_failed=1
    read -r n_pass _ n_fail _ n_skip _ <<< "$summary"
    summary="$n_pass passed, $((n_fail + gz_failed)) failed, $n_skip skipped"
    rm -f "$gz_file"
    echo "geozarr: its tests failed against this zarr (status $gz_status)"
    echo
    echo "$summary"
    exit 1
  fi
  rm -f "$gz_file"
  echo
  echo "$summary"
fi

# ---- 3b. fuzz targets of the C core, briefly (tools/fuzz/run.sh), under CI
# or when ZARR_FUZZ_SECONDS is set
fuzz_secs=${ZARR_FUZZ_SECONDS:-}
if [ -z "$fuzz_secs" ] && is_true "${CI:-}"; then fuzz_secs=20; fi
if [ -n "$fuzz_secs" ] && [ "$fuzz_secs" != 0 ]; then
  if command -v clang >/dev/null 2>&1 || command -v clang-14 >/dev/null 2>&1; then
    say "fuzzing each C target for ${fuzz_secs}s"
    bash tools/fuzz/run.sh "$fuzz_secs" || { echo "fuzz: a target failed"; echo "$summary"; exit 1; }
    echo "$summary"
  else
    say "clang not found: the fuzz targets are not run"
  fi
fi

# ---- 3c. portability: Windows compile, builds without the optional libraries
if is_true "${ZARR_PORTABILITY:-$ci}"; then
  say "portability: src/ compiled for x86_64-w64-mingw32"
  bash tools/check-windows.sh || { echo "check-windows: failed"; echo "$summary"; exit 1; }
  say "portability: src/ compiled with clang -Wall -Wextra"
  clang_status=0
  bash tools/check-clang.sh || clang_status=$?
  case $clang_status in
    0) ;;
    2) say "clang not found: the clang compile of src/ is not run" ;;
    *) echo "check-clang: failed"; echo "$summary"; exit 1 ;;
  esac
  say "portability: installs without each optional library, codec tests"
  bash tools/check-optional.sh || { echo "check-optional: failed"; echo "$summary"; exit 1; }
  echo "$summary"
fi

# ---- 4. R CMD check
if ! $check; then
  exit 0
fi
checkdir="$repo/zarr.Rcheck"
rm -rf "$checkdir"
rm -f "$repo"/zarr_*.tar.gz
build_opts=()
check_opts=(--as-cran --no-manual)
if ! command -v pandoc >/dev/null 2>&1; then
  say "pandoc not found: vignettes are neither built nor checked"
  build_opts+=(--no-build-vignettes)
  check_opts+=(--ignore-vignettes)
fi
if ! command -v checkbashisms >/dev/null 2>&1; then
  say "checkbashisms not found: R CMD check skips the bashism test of ./configure"
  export _R_CHECK_BASHISMS_=false
fi
# As on CRAN: no ../shared fixtures, no interop requirement, NOT_CRAN unset.
unset ZARR_FIXTURES_DIR ZARR_INTEROP_DIR ZARR_TESTSERVER ZARR_S3SERVER ZARR_REQUIRE_INTEROP NOT_CRAN
say "R CMD build ${build_opts[*]}"
R CMD build "${build_opts[@]}" .
tarball=$(ls -t "$repo"/zarr_*.tar.gz | head -n 1)
say "R CMD check ${check_opts[*]} $(basename "$tarball")"
_R_CHECK_CRAN_INCOMING_=false _R_CHECK_CRAN_INCOMING_REMOTE_=false \
  _R_CHECK_SYSTEM_CLOCK_=false \
  R CMD check "${check_opts[@]}" "$tarball" || true
status=$(grep '^Status:' "$checkdir/00check.log" 2>/dev/null | tail -n 1 || true)
echo
echo "R CMD check ${status:-Status: (no status line; see $checkdir)}"
echo "$summary"
case "$status" in
  *ERROR*|*WARNING*|"") exit 2 ;;
esac
exit 0
