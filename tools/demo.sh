#!/usr/bin/env bash
# Install the zarr R package from this checkout into .lib/ and run tools/demo.R.
#
# usage: bash tools/demo.sh        (ZARR_SKIP_SETUP=true skips tools/setup.sh)
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"

# shellcheck source=tools/install.sh
. "$repo/tools/install.sh"

echo "demo: Rscript tools/demo.R"
exec Rscript tools/demo.R
