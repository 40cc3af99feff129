#!/usr/bin/env bash
# Install the zarr R package from this checkout into .lib/ and run tools/demo.R.
#
# usage: bash tools/demo.sh        (ZARR_SKIP_SETUP=true skips tools/setup.sh)
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"

case "${ZARR_SKIP_SETUP:-}" in
  true|TRUE|True|1|yes) echo "demo: skipping tools/setup.sh (ZARR_SKIP_SETUP)" ;;
  *) bash tools/setup.sh ;;
esac

lib="$repo/.lib"
mkdir -p "$lib"
rm -rf "$lib"/00LOCK-*   # left by an interrupted install; the library is ours
export R_LIBS="$lib${R_LIBS:+:$R_LIBS}"
echo "demo: R CMD INSTALL into $lib"
R CMD INSTALL --preclean --no-multiarch -l "$lib" .

echo "demo: Rscript tools/demo.R"
exec Rscript tools/demo.R
