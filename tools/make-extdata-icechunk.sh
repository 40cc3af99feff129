#!/usr/bin/env bash
# Writes inst/extdata/volcano.icechunk: the example store
# inst/extdata/volcano.zarr (see tools/make-extdata.R) copied into an
# Icechunk repository (spec 2, one commit on branch main) by the official
# Icechunk implementation, so that the help pages can open a repository
# without a network. Chunk keys become "/"-separated (Icechunk's key form)
# and the root's consolidated metadata is left out (a repository lists its
# nodes itself); the values are the same.
#
# usage, from the repository root: bash tools/make-extdata-icechunk.sh
# Needs python3, gcc, node and `npm install --prefix tools/icechunk`
# (ICECHUNK_TOOLS may name another checkout's tools/icechunk that has it).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tools=${ICECHUNK_TOOLS:-$repo/tools/icechunk}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r "$repo/inst/extdata/volcano.zarr" "$work/volcano.zarr"
python3 - "$work/volcano.zarr" <<'PY'
import glob, json, os, sys
root = sys.argv[1]
doc = json.load(open(os.path.join(root, "zarr.json")))
doc.pop("consolidated_metadata", None)
doc["attributes"]["created_by"] = ("tools/make-extdata.R of the zarr R package, copied into an "
                                   "Icechunk repository by tools/make-extdata-icechunk.sh")
json.dump(doc, open(os.path.join(root, "zarr.json"), "w"))
for name in sorted(os.listdir(root)):
    meta_path = os.path.join(root, name, "zarr.json")
    if not os.path.isfile(meta_path):
        continue
    meta = json.load(open(meta_path))
    meta["chunk_key_encoding"] = {"name": "default", "configuration": {"separator": "/"}}
    json.dump(meta, open(meta_path, "w"))
    for f in glob.glob(os.path.join(root, name, "c.*")):
        dest = os.path.join(root, name, *os.path.basename(f).split("."))
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        os.rename(f, dest)
PY
bash "$tools/run.sh" import_store.mjs "$work/volcano.zarr" "$work/volcano.icechunk" --spec 2
rm -rf "$work/volcano.icechunk/overwritten" # the repo object before the commit: not read
rm -rf "$repo/inst/extdata/volcano.icechunk"
cp -r "$work/volcano.icechunk" "$repo/inst/extdata/volcano.icechunk"
