# Sourced by tools/test.sh, tools/demo.sh and bench/run.sh (not run on its
# own): set the machine up with tools/setup.sh (unless ZARR_SKIP_SETUP=true)
# and install the package from this checkout into the private library .lib/,
# which is put first in R_LIBS. Expects $repo (the checkout) to be set.

case "${ZARR_SKIP_SETUP:-}" in
  true|TRUE|True|1|yes) echo "install: skipping tools/setup.sh (ZARR_SKIP_SETUP)" ;;
  *) bash "$repo/tools/setup.sh" ;;
esac

lib="$repo/.lib"
mkdir -p "$lib"
rm -rf "$lib"/00LOCK-*   # left by an interrupted install; the library is ours
export R_LIBS="$lib${R_LIBS:+:$R_LIBS}"
echo "install: R CMD INSTALL into $lib"
R CMD INSTALL --preclean --no-multiarch -l "$lib" "$repo"
