#!/usr/bin/env bash
# Set up, install and benchmark the zarr R package from this checkout.
#
# usage: bash bench/run.sh
#
# 1. tools/setup.sh (skip with ZARR_SKIP_SETUP=true);
# 2. R CMD INSTALL into the private library .lib/ (as tools/test.sh does);
# 3. unless ZARR_BENCH_CRAN=false: bench/setup-cran-zarr.R installs the CRAN
#    'zarr' package into bench/lib (a failure only drops the comparison);
# 4. Rscript bench/run.R (table on stdout, bench/results/results.csv);
# 5. unless ZARR_BENCH_REMOTE=false: Rscript bench/remote.R, the HTTP
#    benchmarks (bench/results/remote.csv; needs node and processx);
# 6. unless ZARR_BENCH_PEER=false: Rscript bench/peer.R, this package against
#    zarr-python 2 on the same stores (bench/results/peer.csv; as root, Debian's
#    python3-zarr and python3-numcodecs are installed first when missing).
# 7. unless ZARR_BENCH_S3=false: Rscript bench/s3.R, W1 written to and read
#    from a local S3 server beside local disk (bench/results/s3.csv).
# 8. unless ZARR_BENCH_REFERENCES=false: Rscript bench/references.R, a
#    netCDF-4 variable read through Kerchunk references beside ncdf4 and
#    RNetCDF (bench/results/references.csv; needs Debian's python3-h5py and
#    python3-netcdf4, skipped without them).
# 9. unless ZARR_BENCH_ICECHUNK=false: Rscript bench/icechunk.R, a sharded
#    array read through an Icechunk repository (written by the official
#    implementation, tools/icechunk) beside the same plain store, local and
#    over HTTP (bench/results/icechunk.csv; skipped without tools/icechunk).
# 10. unless ZARR_BENCH_MAPBLOCKS=false: Rscript bench/mapblocks.R,
#    zarr_map_blocks() of a CPU-bound function with 1 and 2 mirai daemons
#    beside base R (bench/results/mapblocks.csv; skipped without mirai).
# The ZARR_BENCH_* variables of bench/run.R pass through (see bench/README.md).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"

say() { printf 'bench: %s\n' "$*"; }
is_true() { case "${1:-}" in true|TRUE|True|1|yes) return 0 ;; *) return 1 ;; esac; }
is_false() { case "${1:-}" in false|FALSE|False|0|no) return 0 ;; *) return 1 ;; esac; }

# ---- 1. and 2. dependencies, then the package into the private library
# shellcheck source=tools/install.sh
. "$repo/tools/install.sh"
export ZARR_BENCH_LIB="${ZARR_BENCH_LIB:-$lib}"

# ---- 3. the CRAN zarr package, in bench/lib only
if is_false "${ZARR_BENCH_CRAN:-true}"; then
  say "skipping the CRAN zarr package (ZARR_BENCH_CRAN=false)"
else
  Rscript bench/setup-cran-zarr.R ||
    say "CRAN zarr not installed: the table says 'not available'"
fi

# ---- nginx for the remote benchmarks' 0 ms row (a real web server beside the
# node test server); optional: without it that row is left out
if ! is_false "${ZARR_BENCH_REMOTE:-true}" && ! command -v nginx >/dev/null 2>&1 &&
   [ ! -x /usr/sbin/nginx ] && [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
  say "apt-get install nginx-light (for bench/remote.R)"
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends nginx-light \
    </dev/null >/dev/null 2>&1 || say "nginx not installed: bench/remote.R leaves its row out"
fi

# ---- zarr-python 2 for the peer benchmark (Debian's python3-zarr and
# python3-numcodecs, for /usr/bin/python3); optional: without them
# bench/peer.R says so and skips
py_has_zarr() { /usr/bin/python3 -c 'import zarr, numcodecs' >/dev/null 2>&1; }
if ! is_false "${ZARR_BENCH_PEER:-true}" && [ -z "${ZARR_BENCH_PYTHON:-}" ] && ! py_has_zarr &&
   [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
  say "apt-get install python3-zarr python3-numcodecs (for bench/peer.R)"
  apt_py() {
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      python3-zarr python3-numcodecs </dev/null >/dev/null 2>&1
  }
  apt_py || { DEBIAN_FRONTEND=noninteractive apt-get update </dev/null >/dev/null 2>&1 && apt_py; } ||
    say "python3-zarr not installed: bench/peer.R will skip"
fi

# ---- 4. the benchmarks
say "Rscript bench/run.R"
status=0
Rscript bench/run.R || status=$?

# ---- 5-10. the other benchmarks, each skipped with ZARR_BENCH_<NAME>=false
# bench_step NAME SCRIPT WHAT: run bench/SCRIPT unless ZARR_BENCH_NAME is false
bench_step() {
  local var="ZARR_BENCH_$1"
  if is_false "${!var:-true}"; then
    say "skipping $3 ($var=false)"
  else
    say "Rscript bench/$2"
    Rscript "bench/$2" || status=$?
  fi
}
bench_step REMOTE remote.R "the remote benchmarks"           # HTTP
bench_step PEER peer.R "the peer benchmark"                  # zarr-python 2 on the same stores
bench_step S3 s3.R "the S3 benchmark"                        # s3rver behind the signature-checking proxy
bench_step REFERENCES references.R "the reference benchmarks" # Kerchunk beside the netCDF readers
bench_step ICECHUNK icechunk.R "the Icechunk benchmark"      # repository vs plain store, local and HTTP
# zarr_map_blocks() on mirai daemons
if Rscript -e 'quit(status = !requireNamespace("mirai", quietly = TRUE))' >/dev/null 2>&1; then
  bench_step MAPBLOCKS mapblocks.R "the map_blocks benchmark"
else
  say "skipping the map_blocks benchmark (no mirai package; tools/setup.sh installs it)"
fi
exit "$status"
