#!/usr/bin/env bash
# Run the test suite of geozarr (a CRAN package built on the zarr 1.0.0 API)
# against the zarr just installed in .lib/. Called by tools/test.sh after the
# package's own suite; expects R_LIBS to start with that library.
#
# geozarr's source comes from CRAN through download.packages() (the
# repositories R is configured with, or ZARR_CRAN_REPO). When they cannot be
# reached, a source tarball named by ZARR_GEOZARR_SOURCE is used instead,
# with a message. Only its declared
# R version is relaxed when this R is older than it asks (geozarr 0.3.0 says
# R >= 4.4; zarr exports `%||%` to R < 4.4); nothing else is changed.
#
# Writes "geozarr <version>: N passed, N failed, N skipped" to stdout and to
# $ZARR_GEOZARR_SUMMARY when set. Exit status: 0 passed or skipped (CRAN
# unreachable outside CI); 1 a test failed; 2 geozarr could not be fetched,
# installed or run (under CI=true, unreachable CRAN is a failure too).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
lib="$repo/.lib"
say() { printf 'geozarr: %s\n' "$*"; }
ci=false
case "${CI:-}" in true|TRUE|True|1|yes) ci=true ;; esac

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# ---- fetch the source package
fetch_status=0
ZARR_GZ_DIR="$work" Rscript - <<'RSCRIPT' || fetch_status=$?
repos <- getOption("repos")
if (!length(repos) || any(repos == "@CRAN@")) {
  alt <- Sys.getenv("ZARR_CRAN_REPO")
  if (!nzchar(alt)) { cat("no CRAN repository configured\n"); quit(status = 3) }
  options(repos = c(CRAN = alt))
}
# not filtered by R version: geozarr declares a newer R than it needs (relaxed below)
avail <- tryCatch(utils::available.packages(type = "source", filters = c("OS_type", "subarch", "duplicates")),
                  error = function(e) NULL)
if (is.null(avail) || !nrow(avail)) { cat("the CRAN repositories cannot be reached\n"); quit(status = 3) }
if (!"geozarr" %in% rownames(avail)) { cat("the CRAN repositories do not have geozarr\n"); quit(status = 4) }
got <- tryCatch(utils::download.packages("geozarr", destdir = Sys.getenv("ZARR_GZ_DIR"), available = avail,
                                         type = "source", quiet = TRUE),
                error = function(e) { cat("download failed:", conditionMessage(e), "\n"); NULL })
if (is.null(got) || !nrow(got)) quit(status = 3)
cat(got[1, 2], "\n", file = file.path(Sys.getenv("ZARR_GZ_DIR"), "tarball"))
RSCRIPT
if [ "$fetch_status" -eq 0 ]; then
  tarball=$(tr -d ' \n' < "$work/tarball")
else
  local_src=${ZARR_GEOZARR_SOURCE:-}
  if [ -n "$local_src" ] && [ -f "$local_src" ]; then
    say "not downloaded from CRAN; using the CRAN source tarball $local_src"
    tarball=$local_src
  elif $ci; then
    say "ERROR: could not download geozarr from CRAN"; exit 2
  else
    say "geozarr could not be fetched from CRAN: its tests are skipped"
    exit 0
  fi
fi
tar -xzf "$tarball" -C "$work"
src="$work/geozarr"
[ -f "$src/DESCRIPTION" ] || { say "ERROR: $tarball holds no geozarr/DESCRIPTION"; exit 2; }
version=$(sed -n 's/^Version: *//p' "$src/DESCRIPTION")

# ---- its dependencies other than zarr (CFtime, testthat), then geozarr itself
Rscript -e '
d <- read.dcf(file.path(commandArgs(TRUE)[1], "DESCRIPTION"))
f <- intersect(c("Depends", "Imports"), colnames(d))
deps <- trimws(sub("\\(.*", "", unlist(strsplit(d[1, f], ","))))
deps <- setdiff(deps[nzchar(deps)], c("R", "zarr", rownames(installed.packages(priority = "base"))))
need <- deps[!vapply(deps, requireNamespace, TRUE, quietly = TRUE)]
if (length(need)) {
  repos <- getOption("repos")
  if (!length(repos) || any(repos == "@CRAN@")) options(repos = c(CRAN = Sys.getenv("ZARR_CRAN_REPO")))
  cat("geozarr: installing", need, "\n")
  install.packages(need, lib = commandArgs(TRUE)[2], quiet = TRUE)
}
still <- need[!vapply(need, requireNamespace, TRUE, quietly = TRUE)]
if (length(still)) { cat("geozarr: missing dependencies:", still, "\n"); quit(status = 2) }
' "$src" "$lib" || { say "ERROR: geozarr's dependencies could not be installed"; exit 2; }

# relax only the declared R version, and only when this R is older
Rscript -e '
f <- file.path(commandArgs(TRUE)[1], "DESCRIPTION")
d <- readLines(f)
m <- regmatches(d, regexpr("R \\(>= *[0-9.]+\\)", d))
if (length(m)) {
  need <- package_version(sub("R \\(>= *([0-9.]+)\\)", "\\1", m[1]))
  if (getRversion() < need) {
    d <- sub("R \\(>= *[0-9.]+\\)", sprintf("R (>= %s)", getRversion()), d)
    writeLines(d, f)
    cat("geozarr: declared", m[1], "relaxed to this R,", format(getRversion()), "\n")
  }
}' "$src"

say "installing geozarr $version into $lib"
R CMD INSTALL --no-multiarch -l "$lib" "$src" > "$work/install.log" 2>&1 ||
  { cat "$work/install.log"; say "ERROR: geozarr did not install against this zarr"; exit 2; }

# ---- its tests
say "running geozarr $version's tests"
run_status=0
(cd "$src" && ZARR_GZ_VERSION="$version" Rscript -e '
res <- tryCatch(
  testthat::test_dir("tests/testthat", package = "geozarr", load_package = "installed",
    reporter = testthat::ProgressReporter$new(show_praise = FALSE, max_failures = Inf),
    stop_on_failure = FALSE),
  error = function(e) e)
if (inherits(res, "error")) {
  cat("\nThe geozarr test run itself failed:", conditionMessage(res), "\n")
  n <- c(passed = 0, failed = 1, skipped = 0)
} else {
  df <- as.data.frame(res)
  n <- c(passed = sum(df$passed), failed = sum(df$failed) + sum(df$error), skipped = sum(df$skipped))
}
line <- sprintf("geozarr %s: %d passed, %d failed, %d skipped", Sys.getenv("ZARR_GZ_VERSION"),
                n[["passed"]], n[["failed"]], n[["skipped"]])
cat("\n", line, "\n", sep = "")
out <- Sys.getenv("ZARR_GEOZARR_SUMMARY")
if (nzchar(out)) writeLines(line, out)
quit(status = if (n[["failed"]] > 0) 1 else 0)
') || run_status=$?
exit "$run_status"
