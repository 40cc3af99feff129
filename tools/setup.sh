#!/usr/bin/env bash
# Install what is needed to build, test and demo the zarr R package on a
# Debian/Ubuntu machine: system libraries and tools (apt; devscripts for
# checkbashisms, used by R CMD check --as-cran), R packages (apt,
# then install.packages() for anything still missing), zarrita.js for the
# interop tests (npm, into tools/interop/node_modules), the official Icechunk
# implementation (npm, tools/icechunk) and the Python clients
# of the interop tests (zarr-python 2, numcodecs, xarray, GDAL; Debian
# packages). node also runs the HTTP test server (tools/testserver/server.js,
# no npm packages), started by the tests with processx.
#
# usage: bash tools/setup.sh
# Idempotent and non-interactive: installs only what is missing, never prompts.
# Exit status: 0 when the package can be built and tested; 1 when a required
# system library or R package is still missing. node/npm problems only warn
# (the interop tests then skip, or fail under ZARR_REQUIRE_INTEROP=true).
# ZARR_CRAN_REPO: CRAN mirror URL to use when R has no repository configured.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"

say()  { printf 'setup: %s\n' "$*"; }
warn() { printf 'setup: WARNING: %s\n' "$*" >&2; }
die()  { printf 'setup: ERROR: %s\n' "$*" >&2; exit 1; }

# ---- how to run apt-get (root, or sudo that does not ask for a password)
apt_ok=false
sudo_cmd=()
if command -v apt-get >/dev/null 2>&1 && command -v dpkg >/dev/null 2>&1; then
  if [ "$(id -u)" -eq 0 ]; then
    apt_ok=true
  elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    apt_ok=true
    sudo_cmd=(sudo -n)
  else
    warn "not root and no password-less sudo: cannot install Debian packages"
  fi
else
  say "apt-get not found: install the equivalents of the Debian packages below by hand"
fi

have_deb() { dpkg -s "$1" 2>/dev/null | grep -q '^Status: install ok installed'; }

apt_updated=false
apt_log=$(mktemp)
trap 'rm -f "$apt_log"' EXIT
apt_run() {  # apt_run args...: apt-get, output shown only when it fails
  if "${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive apt-get "$@" \
       </dev/null >"$apt_log" 2>&1; then
    return 0
  fi
  tail -n 20 "$apt_log" >&2
  return 1
}
apt_install() {  # apt_install pkg...; returns non-zero when apt-get fails
  [ "$#" -gt 0 ] || return 0
  if ! $apt_updated; then
    say "apt-get update"
    apt_run update || return 1
    apt_updated=true
  fi
  say "apt-get install $*"
  apt_run install -y --no-install-recommends "$@"
}

# ---- system packages
required_debs=(libzstd-dev zlib1g-dev libblosc-dev liblz4-dev libbz2-dev liblzma-dev libzfp-dev libcurl4-openssl-dev
               libssl-dev libxml2-dev pkg-config)
# clang with libFuzzer: tools/fuzz/run.sh (a short run in CI, from tools/test.sh)
# Debian's python3 with h5py/netCDF4 (test data for the reference store) and
# fsspec + zarr-python + jinja2 (the independent reader of the references);
# ncdf4 and RNetCDF for bench/references.R; DelayedArray, HDF5Array and
# BiocParallel (Bioconductor) for the DelayedArray backend tests;
# SingleCellExperiment (with Matrix, SummarizedExperiment) for as_sce(); png reads
# back the plots of tests/testthat/test-plot.R
# gcc-mingw-w64-x86-64: tools/check-windows.sh compiles src/ for Windows (CI)
optional_debs=(qpdf pandoc unzip clang libclang-rt-dev gcc-mingw-w64-x86-64 python3-h5py python3-netcdf4 python3-fsspec
               python3-zarr python3-jinja2 r-cran-ncdf4 r-cran-rnetcdf
               r-bioc-delayedarray r-bioc-hdf5array r-bioc-biocparallel
               r-cran-stars r-cran-terra r-cran-sf r-cran-units r-cran-ncmeta
               r-bioc-singlecellexperiment r-cran-png)
r_debs=(r-cran-r6 r-cran-jsonlite r-cran-testthat r-cran-bit64 r-cran-knitr
        r-cran-rmarkdown r-cran-withr r-cran-processx r-cran-cli)
r_pkgs=(R6 jsonlite testthat bit64 knitr rmarkdown withr processx cli)

if command -v dpkg >/dev/null 2>&1; then
  missing=()
  for p in "${required_debs[@]}" "${optional_debs[@]}" "${r_debs[@]}"; do
    have_deb "$p" || missing+=("$p")
  done
  # R itself (a fresh machine may have none), with the headers packages build against
  command -v Rscript >/dev/null 2>&1 || missing+=(r-base-dev)
  # checkbashisms (devscripts): R CMD check --as-cran wants it for ./configure
  command -v checkbashisms >/dev/null 2>&1 || missing+=(devscripts)
  # node/npm may come from elsewhere (nodesource, nvm, ...): then leave them be.
  command -v node >/dev/null 2>&1 || missing+=(nodejs)
  if ! command -v npm >/dev/null 2>&1 && command -v node >/dev/null 2>&1; then
    npm_alone=true   # node is there but npm is not: try Debian's npm on its own
  else
    npm_alone=false
    command -v npm >/dev/null 2>&1 || missing+=(npm)
  fi
  if [ "${#missing[@]}" -eq 0 ] && ! $npm_alone; then
    say "system packages: all present"
  elif $apt_ok; then
    if [ "${#missing[@]}" -gt 0 ] && ! apt_install "${missing[@]}"; then
      warn "apt-get install failed; trying the packages one by one"
      for p in "${missing[@]}"; do
        have_deb "$p" || apt_install "$p" || warn "could not install $p"
      done
    fi
    if $npm_alone; then
      apt_install npm || warn "could not install npm next to the existing node"
    fi
  else
    warn "missing system packages: ${missing[*]}"
  fi
  still=()
  for p in "${required_debs[@]}"; do have_deb "$p" || still+=("$p"); done
  [ "${#still[@]}" -eq 0 ] || die "required system packages missing: ${still[*]}"
  for p in "${optional_debs[@]}"; do
    have_deb "$p" || warn "$p is missing (optional)"
  done
  command -v checkbashisms >/dev/null 2>&1 ||
    warn "checkbashisms (devscripts) is missing: R CMD check will skip its bashism test"
fi

# ---- Python clients of the interop tests (optional: the tests skip without
# them, or fail under ZARR_REQUIRE_INTEROP=true)
# (anndata writes the AnnData stores of test-anndata.R and bench/anndata.R)
python_debs=(python3-zarr python3-numcodecs python3-xarray python3-cftime gdal-bin python3-gdal
             python3-anndata)
if command -v dpkg >/dev/null 2>&1; then
  py_missing=()
  for p in "${python_debs[@]}"; do have_deb "$p" || py_missing+=("$p"); done
  if [ "${#py_missing[@]}" -eq 0 ]; then
    say "python interop clients: all present"
  elif $apt_ok; then
    if ! apt_install "${py_missing[@]}"; then
      for p in "${py_missing[@]}"; do
        have_deb "$p" || apt_install "$p" || warn "could not install $p (python interop tests will skip)"
      done
    fi
  else
    warn "missing python interop clients: ${py_missing[*]} (their tests will skip)"
  fi
fi

# ---- R packages
command -v Rscript >/dev/null 2>&1 || die "Rscript not found: install R first"
say "R packages: ${r_pkgs[*]}"
ZARR_R_PKGS="${r_pkgs[*]}" Rscript - <<'RSCRIPT' || die "R packages could not be installed"
pkgs <- strsplit(Sys.getenv("ZARR_R_PKGS"), " ", fixed = TRUE)[[1]]
loadable <- function(p) suppressWarnings(suppressMessages(requireNamespace(p, quietly = TRUE)))
need <- pkgs[!vapply(pkgs, loadable, logical(1))]
if (!length(need)) {
  cat("setup: R packages: all loadable\n")
  quit(status = 0)
}
cat("setup: installing R packages from CRAN:", need, "\n")
repos <- getOption("repos")
if (!length(repos) || any(repos == "@CRAN@")) {
  alt <- Sys.getenv("ZARR_CRAN_REPO")
  if (!nzchar(alt)) {
    cat("setup: ERROR: R has no CRAN repository configured (repos is '@CRAN@').\n",
        "setup: set one with options(repos = c(CRAN = '<mirror URL>')) in an Rprofile\n",
        "setup: (e.g. /etc/R/Rprofile.site or ~/.Rprofile), or set ZARR_CRAN_REPO.\n",
        sep = "", file = stderr())
    quit(status = 1)
  }
  options(repos = c(CRAN = alt))
}
# install.packages() stops when not interactive and the library is not
# writable: use the first writable library, else the user library.
lib <- Filter(function(d) dir.exists(d) && file.access(d, 2) == 0, .libPaths())
if (length(lib)) {
  lib <- lib[[1]]
} else {
  lib <- strsplit(Sys.getenv("R_LIBS_USER"), .Platform$path.sep, fixed = TRUE)[[1]][1]
  dir.create(lib, recursive = TRUE, showWarnings = FALSE)
  .libPaths(c(lib, .libPaths()))
}
install.packages(need, lib = lib, quiet = TRUE)
still <- need[!vapply(need, loadable, logical(1))]
if (length(still)) {
  cat("setup: ERROR: still not loadable:", still, "\n", file = stderr())
  quit(status = 1)
}
cat("setup: R packages: installed", need, "into", lib, "\n")
RSCRIPT

# ---- optional R packages from CRAN: nanoparquet reads Parquet references
# (Suggests; the tests skip without it, or fail under ZARR_REQUIRE_INTEROP=true);
# mirai (with its dependency nanonext) runs zarr_map_blocks() on daemons;
# cli prints through the theme (Suggests); CFtime is what geozarr, whose tests
# tools/test.sh runs against this package, needs besides zarr
r_optional=(nanoparquet mirai cli CFtime)
say "optional R packages: ${r_optional[*]}"
ZARR_R_PKGS="${r_optional[*]}" Rscript - <<'RSCRIPT' || warn "optional R packages could not be installed: ${r_optional[*]}"
pkgs <- strsplit(Sys.getenv("ZARR_R_PKGS"), " ", fixed = TRUE)[[1]]
need <- pkgs[!vapply(pkgs, function(p) requireNamespace(p, quietly = TRUE), logical(1))]
if (!length(need)) quit(status = 0)
repos <- getOption("repos")
if (!length(repos) || any(repos == "@CRAN@")) {
  alt <- Sys.getenv("ZARR_CRAN_REPO")
  if (!nzchar(alt)) quit(status = 1)
  options(repos = c(CRAN = alt))
}
lib <- Filter(function(d) dir.exists(d) && file.access(d, 2) == 0, .libPaths())
lib <- if (length(lib)) lib[[1]] else {
  l <- strsplit(Sys.getenv("R_LIBS_USER"), .Platform$path.sep, fixed = TRUE)[[1]][1]
  dir.create(l, recursive = TRUE, showWarnings = FALSE)
  .libPaths(c(l, .libPaths()))
  l
}
install.packages(need, lib = lib, quiet = TRUE)
quit(status = if (all(vapply(need, function(p) requireNamespace(p, quietly = TRUE), logical(1)))) 0 else 1)
RSCRIPT

# ---- node tools, each in its own tools/<dir> with its package.json: npm
# install when node_modules is missing, older than package(-lock).json, or
# the probe (a command run in that folder) fails; a failure only makes the
# tests that need the tool skip.
npm_tool() { # dir label skips probe...
  local dir="$repo/tools/$1" label=$2 skips=$3
  shift 3
  local stamp="$dir/node_modules/.package-lock.json"
  if [ -f "$stamp" ] && [ ! "$dir/package.json" -nt "$stamp" ] &&
     { [ ! -f "$dir/package-lock.json" ] || [ ! "$dir/package-lock.json" -nt "$stamp" ]; } &&
     (cd "$dir" && "$@") >/dev/null 2>&1; then
    say "$label: up to date in tools/${dir##*/}/node_modules"
  else
    say "npm install in tools/${dir##*/} (node $(node --version), npm $(npm --version 2>/dev/null))"
    if npm install --no-audit --no-fund --prefix "$dir" </dev/null; then
      say "$label: installed"
    else
      warn "npm install failed in tools/${dir##*/}: $skips will skip"
    fi
  fi
}
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  warn "node or npm not found: zarrita.js, s3rver, Azurite and Icechunk not installed, their tests will skip"
else
  # zarrita.js for the interop tests
  npm_tool interop zarrita.js "interop tests" node --input-type=module -e 'import "zarrita"; import "@zarrita/storage";'
  # s3rver for the S3 tests (behind tools/s3server/proxy.js, which checks signatures)
  npm_tool s3server s3rver "S3 tests" node -e 'require("s3rver")'
  # Azurite (Azure Storage emulator, checks Shared Key and SAS) for the Azure tests
  npm_tool azurite azurite "Azure tests" test -f node_modules/azurite/dist/src/blob/main.js
  # the official Icechunk implementation (native module) with zarrita: the
  # oracle of the Icechunk tests and bench (tools/icechunk/run.sh builds the
  # glibc shim it needs on Debian 12 when it runs)
  npm_tool icechunk icechunk "Icechunk tests" test -f node_modules/@earthmover/icechunk/index.js
fi

say "done"
