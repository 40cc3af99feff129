# A ZV store written here, read by an independent decoder: Python's json,
# struct and numcodecs' Blosc walk the store's files, decompress each blob
# and parse the fragment indexes, links and manifests from their byte
# layouts.

zv_python <- '
import os, struct, numcodecs
root = sys.argv[1]
def blob(path):
    meta = json.load(open(os.path.join(root, path, "zarr.json")))
    assert meta["data_type"] == "uint8" and len(meta["shape"]) == 1
    n = meta["shape"][0]
    if n == 0:
        return b""
    raw = open(os.path.join(root, path, "c", "0"), "rb").read()
    names = [c["name"] for c in meta["codecs"]]
    assert names == ["bytes", "blosc"], names
    out = numcodecs.Blosc().decode(raw)
    assert len(out) == n
    return bytes(out)
def fragments(b):
    magic, version, flags, F, R = struct.unpack_from("<IHHII", b, 0)
    assert magic == 0x5A564647 and version == 1 and flags == 0
    at = 16 + (((F + 7) // 8 + 7) & ~7) if F else 16
    bitmap = b[16:16 + (F + 7) // 8]
    ranges = [struct.unpack_from("<qq", b, at + 16 * r) for r in range(R)]
    return [bool(bitmap[f >> 3] >> (f & 7) & 1) for f in range(F)], ranges
lvl = os.path.join(root, "0")
keys = sorted(k for k in os.listdir(os.path.join(lvl, "vertices")) if k != "zarr.json")
out = {"keys": keys, "counts": [], "ranges": [], "links": 0, "objects": 0}
for k in keys:
    v = blob("0/vertices/" + k)
    out["counts"].append(len(v) // 24)
    isr, ranges = fragments(blob("0/vertex_fragments/" + k))
    assert all(isr)
    out["ranges"].append([list(r) for r in ranges])
    out["links"] += len(blob("0/links/0/" + k)) // 16
data = blob("0/object_index/data")
offs = blob("0/object_index/offsets")
starts = [struct.unpack_from("<q", offs, 8 * i)[0] for i in range(len(offs) // 8)]
blocks = 0
for i, s in enumerate(starts):
    (B,) = struct.unpack_from("<I", data, s)
    blocks += B
out["objects"] = len(starts)
out["blocks"] = blocks
ccl = blob("0/cross_chunk_links/0/data")
out["cross"] = len(ccl) // (2 * 4 * 8)
emit(out)
'

test_that("numcodecs and a Python parser of the layouts read a ZV store written here", {
  skip_without_python_zarr()
  set.seed(10)
  n <- 400
  xyz <- matrix(runif(3 * n, 0, 60), ncol = 3)
  obj <- sample(0:4, n, TRUE)
  edges <- cbind(1:(n - 1), 2:n)
  path <- withr::local_tempfile(fileext = ".zarr")
  zv <- write_zarr_vectors(path, xyz, chunk_shape = c(30, 30, 30), links = edges, objects = obj,
                           dtype = "float64", levels = 1L)
  py <- run_python(zv_python, path)
  ch <- zv$chunks()
  expect_identical(unlist(py$keys), rownames(ch))
  got <- zv$read_level()
  expect_identical(as.numeric(unlist(py$counts)), as.numeric(table(factor(as.character(got$vertices$chunk), rownames(ch)))))
  expect_identical(as.numeric(py$links) + as.numeric(py$cross), as.numeric(nrow(edges)))
  expect_identical(as.numeric(py$cross), as.numeric(nrow(zv$cross_chunk_links()$rows)))
  expect_identical(as.numeric(py$objects), 5)
  expect_identical(as.numeric(py$blocks), as.numeric(length(zv$manifests(0:4)$object)))
  f1 <- zv$fragments(rownames(ch)[1])
  expect_equal(matrix(as.numeric(unlist(py$ranges[[1]])), ncol = 2, byrow = TRUE), cbind(f1$start, f1$count))
})
