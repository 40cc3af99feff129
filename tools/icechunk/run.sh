#!/usr/bin/env bash
# Runs a script of this folder with the official Icechunk implementation's
# native module: builds glibc_c23_shim.c (two symbols Debian 12's glibc 2.36
# lacks) into $ICECHUNK_SHIM_DIR (default: a per-user temp dir) and preloads
# it. Needs gcc, node and `npm install` here (tools/setup.sh does it).
#
# usage: bash tools/icechunk/run.sh make_repos.mjs <outdir> [options]
# Exit status: the script's; 3 when the module cannot be loaded (the callers
# then skip).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
shimdir=${ICECHUNK_SHIM_DIR:-${TMPDIR:-/tmp}/zarr-icechunk-shim-$(id -u)}
shim="$shimdir/glibc_c23_shim.so"
if [ ! -f "$shim" ] || [ "$here/glibc_c23_shim.c" -nt "$shim" ]; then
  mkdir -p "$shimdir"
  gcc -shared -fPIC -O2 -o "$shim.tmp.$$" "$here/glibc_c23_shim.c" && mv "$shim.tmp.$$" "$shim" ||
    { echo "icechunk: cannot build the glibc shim" >&2; exit 3; }
fi
# npm may skip the optional platform package: point the loader at the file
if [ -z "${NAPI_RS_NATIVE_LIBRARY_PATH:-}" ]; then
  for f in "$here/node_modules/@earthmover/icechunk-linux-x64-gnu/icechunk.linux-x64-gnu.node" \
           "$here/node_modules/@earthmover/icechunk/icechunk.linux-x64-gnu.node"; do
    if [ -f "$f" ]; then export NAPI_RS_NATIVE_LIBRARY_PATH="$f"; break; fi
  done
fi
# only the shim: a preload of the caller (AddressSanitizer under tools/asan.sh) breaks node
export LD_PRELOAD="$shim"
cd "$here"
if ! node -e 'require("@earthmover/icechunk").Storage.newLocalFilesystem' >/dev/null 2>&1; then
  echo "icechunk: the native module of @earthmover/icechunk does not load (npm install in tools/icechunk?)" >&2
  exit 3
fi
script=$1; shift
exec node "$here/$script" "$@"
