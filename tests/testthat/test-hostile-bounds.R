# The hostile-store suite (issue 26), amplification bounds: store content
# whose parse would expand far beyond its size (FlatBuffers whose vector
# entries share one table, Kerchunk `gen` entries naming billions of keys)
# fails with a classed error before the memory is taken; the budget is the
# option zarr.max_decoded_bytes. And the first snapshot of an Icechunk
# repository (no nodes) opens as an empty hierarchy.

# ---- FlatBuffers written by hand ----------------------------------------------
# A forward layout: every object is written after the slots that point at it
# (offsets are unsigned), each table right after its vtable. Objects:
# fb_tbl(list of fields by id (NULL: absent)), fields fb_u8()/fb_u32()/
# fb_u64()/fb_struct(raw) inline or objects (an offset); fb_vec(list of
# objects); fb_blob(raw, elem) (a vector of scalars or structs); fb_str().
# fb_shared(obj) makes every slot pointing at it point at one copy.

fb_u8 <- function(x) structure(list(bytes = as.raw(x)), class = "fb_inline")
fb_u32 <- function(x) structure(list(bytes = writeBin(as.integer(x), raw(), size = 4L, endian = "little")), class = "fb_inline")
fb_u64 <- function(x) structure(list(bytes = c(writeBin(as.integer(x), raw(), size = 4L, endian = "little"), raw(4))),
                                class = "fb_inline")
fb_struct <- function(bytes) structure(list(bytes = bytes), class = "fb_inline")
fb_tbl <- function(...) structure(list(fields = list(...)), class = "fb_table")
fb_vec <- function(items) structure(list(items = items), class = "fb_vector")
fb_blob <- function(bytes, elem = 1L) structure(list(bytes = bytes, count = length(bytes) %/% elem), class = "fb_blob")
fb_str <- function(s) {
  b <- charToRaw(enc2utf8(s))
  structure(list(bytes = c(b, as.raw(0)), count = length(b)), class = "fb_blob")
}
fb_shared <- function(obj) {
  obj$memo <- new.env(parent = emptyenv())
  obj
}

fb_build <- function(root) {
  out <- new.env(parent = emptyenv())
  out$chunks <- list()
  out$size <- 0
  put <- function(bytes) {
    at <- out$size
    out$chunks[[length(out$chunks) + 1L]] <- bytes
    out$size <- out$size + length(bytes)
    at
  }
  patch <- list()
  le32 <- function(x) writeBin(as.integer(x), raw(), size = 4L, endian = "little")
  emit <- function(obj) {
    if (!is.null(obj$memo) && !is.null(obj$memo$pos)) return(obj$memo$pos)
    kids <- list()
    if (inherits(obj, "fb_table")) {
      f <- obj$fields
      body <- raw(4)
      offs <- integer(length(f))
      for (i in seq_along(f)) {
        if (is.null(f[[i]])) next
        offs[i] <- length(body)
        if (inherits(f[[i]], "fb_inline")) {
          body <- c(body, f[[i]]$bytes)
        } else {
          kids[[length(kids) + 1L]] <- list(at = length(body), obj = f[[i]])
          body <- c(body, raw(4))
        }
      }
      vt <- c(writeBin(as.integer(c(4L + 2L * length(f), length(body), offs)), raw(), size = 2L, endian = "little"))
      put(vt)
      pos <- put(c(le32(length(vt)), body[-(1:4)]))
    } else if (inherits(obj, "fb_vector")) {
      n <- length(obj$items)
      pos <- put(c(le32(n), raw(4 * n)))
      kids <- lapply(seq_len(n), function(j) list(at = 4 * j, obj = obj$items[[j]]))
    } else {
      pos <- put(c(le32(obj$count), obj$bytes))
    }
    if (!is.null(obj$memo)) obj$memo$pos <- pos
    for (k in kids) patch[[length(patch) + 1L]] <<- c(pos + k$at, emit(k$obj))
    pos
  }
  put(raw(4))
  r <- emit(root)
  buf <- do.call(c, out$chunks)
  buf[1:4] <- le32(r)
  for (p in patch) buf[p[1] + 1:4] <- le32(p[2] - p[1])
  buf
}

# An Icechunk object (spec 2) of `type` (1 snapshot, 2 manifest, 6 repo
# info) with an uncompressed payload.
ic_object <- function(payload, type) {
  magic <- as.raw(c(0x49, 0x43, 0x45, 0xF0, 0x9F, 0xA7, 0x8A, 0x43, 0x48, 0x55, 0x4E, 0x4B))
  c(magic, charToRaw(formatC("ic-hostile", width = -24)), as.raw(c(2L, type, 0L)), payload)
}

# The bytes of an id printed in Crockford base 32.
ic_id_bytes <- function(id, n) {
  v <- match(strsplit(id, "")[[1L]], strsplit("0123456789ABCDEFGHJKMNPQRSTVWXYZ", "")[[1L]]) - 1L
  bits <- unlist(lapply(v, function(x) rev(as.integer(intToBits(x))[1:5])))[seq_len(8 * n)]
  packBits(as.logical(unlist(lapply(split(bits, rep(seq_len(n), each = 8)), rev))), "raw")
}

# A copy of the small spec 2 repository (tests/testthat/icechunk/v2) in a
# hostile_dir(): list(dir, store, outside, node, manifest) with the
# /grp/int32 array's node id and manifest id.
ic_hostile_repo <- function(env = parent.frame()) {
  h <- hostile_dir(env, store = "v2")
  file.copy(test_path("icechunk", "v2"), h$dir, recursive = TRUE)
  snap <- file.path(h$store, "snapshots", "ZDP6C2RY2P7P1WJDESR0")
  s <- .Call(ffi_icechunk_snapshot, readBin(snap, "raw", file.size(snap)), "s", max_decoded_bytes())
  i <- match("/grp/int32", s$nodes$path)
  c(h, node = s$nodes$node_id[i], manifest = s$nodes$manifests[[i]]$id[1L])
}

# A manifest of `n_arrays` entries that are one array table, whose `n_refs`
# chunk references are one table: n_arrays * n_refs references in
# 4 * (n_arrays + n_refs) bytes.
ic_shared_manifest <- function(node, n_arrays, n_refs) {
  ref <- fb_shared(fb_tbl(fb_blob(raw(8), 4L), NULL, NULL, NULL, fb_struct(as.raw(1:12))))
  arr <- fb_shared(fb_tbl(fb_struct(ic_id_bytes(node, 8L)), fb_vec(rep(list(ref), n_refs))))
  ic_object(fb_build(fb_tbl(fb_struct(raw(12)), fb_vec(rep(list(arr), n_arrays)))), 2L)
}

test_that("hand-written flatbuffers parse as the Icechunk reader expects", {
  ice <- ic_hostile_repo()
  m <- .Call(ffi_icechunk_manifest, ic_shared_manifest(ice$node, 1L, 3L), "m", max_decoded_bytes())
  expect_identical(m$arrays$node_id, ice$node)
  expect_identical(m$arrays$count, 3L)
  expect_identical(m$coords, integer(6))
  expect_identical(m$kind, rep(1L, 3))
})

test_that("an Icechunk manifest whose chunk references share one table is refused before it takes the memory", {
  skip_without_proc_status()
  ice <- ic_hostile_repo()
  # 4 million references in 16 kB (the issue's 3.5 kB zstd object named 8.3 GB)
  bomb <- ic_shared_manifest(ice$node, 2000L, 2000L)
  expect_lt(length(bomb), 20000)
  writeBin(bomb, file.path(ice$store, "manifests", ice$manifest))
  before <- hostile_snapshot(ice$dir, except = ice$store)
  e <- expect_error(.Call(ffi_icechunk_manifest, bomb, "manifests/X", max_decoded_bytes()), class = "zarr_error_icechunk")
  expect_match(conditionMessage(e), "share|shared")
  expect_identical(e$key, "manifests/X")
  # the repository opens; the array whose chunks it holds fails when read, naming it
  z <- open_zarr(ice$store)
  expect_identical(z[["/grp"]]$attributes$unicode, "Zürich ✓")
  e <- expect_error(z[["/grp/int32"]][], class = "zarr_error_icechunk")
  expect_match(conditionMessage(e), ice$manifest)
  expect_true("zarr_error_icechunk" %in% hostile_touch(ice$store))
  peak <- hostile_peak(sprintf("z <- open_zarr('%s'); z[['/grp/int32']][]", ice$store), timeout = 60)
  expect_identical(peak$class, "zarr_error_icechunk")
  expect_lt(peak$mb, 256)
  # the same repository on a web server
  srv <- http_server(ice$dir)
  url <- paste0(srv$url, "/v2")
  expect_error(open_zarr(url)[["/grp/int32"]][], class = "zarr_error_icechunk")
  peak <- hostile_peak(sprintf("z <- open_zarr('%s'); z[['/grp/int32']][]", url), timeout = 60)
  expect_identical(peak$class, "zarr_error_icechunk")
  expect_lt(peak$mb, 256)
  expect_outside_unchanged(before, ice$dir, except = ice$store)
})

test_that("the first snapshot of an Icechunk repository, and a repository with no commit, open as an empty hierarchy", {
  ice <- icechunk_oracle()
  before <- hostile_snapshot(ice$dir)
  for (name in c("empty_v1", "empty_v2", "v1", "v2")) {
    rep <- ice$expected$repos[[name]]
    path <- file.path(ice$dir, name)
    hist <- rep$history$main
    first <- hist[[length(hist)]]$id
    expect_identical(hist[[length(hist)]]$message, "Repository initialized")
    # what the official implementation reads there: no node, not even the root
    if (startsWith(name, "empty")) for (ref in rep$refs) expect_length(ref$nodes, 0L)
    expect_identical(icechunk_history(path)$snapshot_id, vapply(hist, `[[`, "", "id"))
    zs <- list(open_zarr(path, snapshot = first))
    if (startsWith(name, "empty")) zs <- c(zs, list(open_zarr(path), open_zarr(path, branch = "main", read_only = FALSE)))
    for (z in zs) {
      expect_identical(z$store$snapshot_id, first, info = name)
      expect_identical(z$store$list_prefix(""), character(), info = name)
      expect_false(z$store$exists("zarr.json"))
      # an empty root group, without attributes
      expect_identical(z$groups, "/", info = name)
      expect_identical(z$arrays, character(), info = name)
      expect_length(z$root$attributes, 0L)
      expect_match(paste(utils::capture.output(print(z)), collapse = "\n"), "Arrays *: 0")
    }
    expect_identical(hostile_touch(path, snapshot = first), character())
  }
  expect_outside_unchanged(before, ice$dir)
})

# A snapshot of `n_nodes` entries that are one array node, whose `n_refs`
# manifest references are one table.
ic_shared_snapshot <- function(n_nodes, n_refs, manifest = "ZSEH3K5JC1035FS4W5FG") {
  mref <- fb_shared(fb_tbl(fb_struct(ic_id_bytes(manifest, 12L)), fb_blob(as.raw(c(0, 0, 0, 0, 3, 0, 0, 0)), 8L)))
  meta <- '{"zarr_format":3,"node_type":"array","shape":[4],"data_type":"int8","chunk_grid":{"name":"regular","configuration":{"chunk_shape":[2]}},"chunk_key_encoding":{"name":"default"},"fill_value":0,"codecs":[{"name":"bytes"}]}'
  node <- fb_shared(fb_tbl(fb_struct(as.raw(1:8)), fb_str("/a"), fb_blob(charToRaw(meta)), fb_u8(1L),
                           fb_tbl(NULL, NULL, fb_vec(rep(list(mref), n_refs)))))
  ic_object(fb_build(fb_tbl(fb_struct(as.raw(1:12)), NULL, fb_vec(rep(list(node), n_nodes)), fb_u64(0L),
                            fb_str("hostile"))), 1L)
}

test_that("an Icechunk snapshot whose nodes and manifest references share tables is refused", {
  skip_without_proc_status()
  ok <- .Call(ffi_icechunk_snapshot, ic_shared_snapshot(1L, 1L), "s", max_decoded_bytes())
  expect_identical(ok$nodes$path, "/a")
  expect_identical(ok$nodes$manifests[[1]]$to, matrix(3, 1, 1))
  ice <- ic_hostile_repo()
  bomb <- ic_shared_snapshot(2000L, 2000L) # 4 million manifest references in 17 kB
  expect_lt(length(bomb), 20000)
  writeBin(bomb, file.path(ice$store, "snapshots", "ZDP6C2RY2P7P1WJDESR0"))
  before <- hostile_snapshot(ice$dir, except = ice$store)
  e <- expect_error(open_zarr(ice$store), class = "zarr_error_icechunk")
  expect_identical(e$key, "snapshots/ZDP6C2RY2P7P1WJDESR0")
  expect_match(conditionMessage(e), "shared")
  expect_identical(hostile_touch(ice$store), "zarr_error_icechunk")
  peak <- hostile_peak(sprintf("open_zarr('%s')", ice$store), timeout = 60)
  expect_identical(peak$class, "zarr_error_icechunk")
  expect_lt(peak$mb, 256)
  # nodes listed twice (their tables distinct): the chunks of their manifest would be taken once per copy
  node <- fb_tbl(fb_struct(as.raw(1:8)), fb_str("/a"), fb_blob(charToRaw('{"zarr_format":3,"node_type":"group"}')), fb_u8(2L), fb_tbl())
  node2 <- fb_tbl(fb_struct(as.raw(1:8)), fb_str("/b"), fb_blob(charToRaw('{"zarr_format":3,"node_type":"group"}')), fb_u8(2L), fb_tbl())
  twice <- ic_object(fb_build(fb_tbl(fb_struct(as.raw(1:12)), NULL, fb_vec(list(node, node2)), fb_u64(0L), fb_str("x"))), 1L)
  writeBin(twice, file.path(ice$store, "snapshots", "ZDP6C2RY2P7P1WJDESR0"))
  e <- expect_error(open_zarr(ice$store), class = "zarr_error_icechunk")
  expect_match(conditionMessage(e), "listed twice")
  expect_outside_unchanged(before, ice$dir, except = ice$store)
})

test_that("the Icechunk parse budget is zarr.max_decoded_bytes, named when exceeded", {
  ice <- ic_hostile_repo()
  # 20,000 distinct chunk references (no table shared): about 5 MB parsed
  refs <- lapply(seq_len(20000) - 1L, function(i)
    fb_tbl(fb_blob(writeBin(c(i %/% 200L, i %% 200L), raw(), size = 4L, endian = "little"), 4L), NULL, NULL, NULL,
           fb_struct(as.raw(1:12))))
  big <- ic_object(fb_build(fb_tbl(fb_struct(raw(12)), fb_vec(list(fb_tbl(fb_struct(ic_id_bytes(ice$node, 8L)),
                                                                         fb_vec(refs)))))), 2L)
  m <- .Call(ffi_icechunk_manifest, big, "m", max_decoded_bytes())
  expect_identical(m$arrays$count, 20000L)
  e <- expect_error(.Call(ffi_icechunk_manifest, big, "manifests/M", 2^20), class = "zarr_error_icechunk")
  expect_match(conditionMessage(e), "more than 1048576 bytes.*zarr.max_decoded_bytes")
  expect_identical(e$key, "manifests/M")
  # through the option: the array's reads fail, naming the manifest
  writeBin(big, file.path(ice$store, "manifests", ice$manifest))
  withr::local_options(zarr.max_decoded_bytes = 2^20)
  z <- open_zarr(ice$store)
  e <- expect_error(z[["/grp/int32"]][], class = "zarr_error_icechunk")
  expect_match(conditionMessage(e), "zarr.max_decoded_bytes")
  expect_match(conditionMessage(e), ice$manifest)
  # a payload larger than the budget is refused before it is decompressed
  skip_if(!nzchar(Sys.which("zstd")), "no zstd command")
  f <- withr::local_tempfile()
  writeBin(c(as.raw(c(12, 0, 0, 0)), raw(2^21)), f)
  system2("zstd", c("-q", "-f", f, "-o", paste0(f, ".zst")))
  obj <- c(ic_object(raw(), 2L)[1:38], as.raw(1L), readBin(paste0(f, ".zst"), "raw", 1e6))
  expect_lt(length(obj), 2000)
  e <- expect_error(.Call(ffi_icechunk_manifest, obj, "manifests/Z", 2^20), class = "zarr_error_icechunk")
  expect_match(conditionMessage(e), "manifest would take more than 1048576 bytes")
})

# ---- Kerchunk references -------------------------------------------------------

# A reference file (JSON version 1) in a hostile_dir(): a small array whose
# chunks come from `gen`, with `templates`.
ref_hostile <- function(gen, templates = list(f = "data.bin"), env = parent.frame()) {
  h <- hostile_dir(env, store = "refs.json")
  zarray <- '{"zarr_format":2,"shape":[4],"chunks":[2],"dtype":"|u1","compressor":null,"filters":null,"fill_value":0,"order":"C"}'
  doc <- list(version = 1L, templates = templates, gen = gen,
              refs = list(.zgroup = '{"zarr_format":2}', `v/.zarray` = zarray))
  writeBin(as.raw(1:8), file.path(h$dir, "data.bin"))
  writeLines(jsonlite::toJSON(doc, auto_unbox = TRUE), h$store)
  h
}

test_that("Kerchunk gen entries that name billions of keys are refused before they are made", {
  skip_without_proc_status()
  # the sane case reads
  h <- ref_hostile(list(list(key = "v/{{i}}", url = "{{f}}", offset = "{{i * 2}}", length = "2",
                             dimensions = list(i = list(stop = 2)))))
  expect_identical(open_zarr(h$store)[["/v"]][], 1:4)
  bombs <- list(
    # 10^12 keys from one range
    list(list(key = "v/{{i}}", url = "{{f}}", offset = "0", length = "1", dimensions = list(i = list(stop = 1e12)))),
    # 10^5 x 10^5 from two small ranges
    list(list(key = "v/{{i}}.{{j}}", url = "{{f}}", dimensions = list(i = list(stop = 1e5), j = list(stop = 1e5)))),
    # strings of a list filling the keys (26 x 10,000 keys of 20 kB)
    list(list(key = "v/{{s}}{{i}}", url = "{{f}}", dimensions = list(s = as.list(strrep(letters, 20000)), i = list(stop = 1e4)))),
    # many gen entries of 20,000 keys each, with a budget of 16 MiB: together beyond it
    structure(rep(list(list(key = "v/{{i}}", url = "{{f}}", dimensions = list(i = list(stop = 2e4)))), 50), budget = 2^24))
  for (gen in bombs) {
    h <- ref_hostile(gen)
    before <- hostile_snapshot(h$dir, except = h$store)
    withr::local_options(zarr.max_decoded_bytes = attr(gen, "budget"))
    e <- expect_error(open_zarr(h$store), class = "zarr_error_metadata")
    expect_match(conditionMessage(e), "zarr.max_decoded_bytes")
    expect_identical(hostile_touch(h$store), "zarr_error_metadata")
    peak <- hostile_peak(sprintf("options(zarr.max_decoded_bytes = %s); open_zarr('%s')",
                                 deparse(attr(gen, "budget")), h$store), timeout = 60)
    expect_identical(peak$class, "zarr_error_metadata")
    expect_lt(peak$mb, 256)
    expect_outside_unchanged(before, h$dir, except = h$store)
  }
  # a range that is not a number: a classed error
  h <- ref_hostile(list(list(key = "v/{{i}}", url = "{{f}}", dimensions = list(i = list(stop = "x")))))
  expect_error(open_zarr(h$store), class = "zarr_error_metadata")
})

test_that("Kerchunk templates fill URLs once, within the budget", {
  skip_without_proc_status()
  # a template naming another is not expanded again (as fsspec's jinja2 does):
  # each naming the next 64 times would otherwise put 64^6 copies in a URL
  templates <- list()
  for (k in 1:6) templates[[paste0("t", k)]] <- strrep(sprintf("{{t%d}}", k + 1L), 64)
  templates$t7 <- "x"
  expect_identical(ref_templates("{{t1}}", templates), templates$t1)
  # 100,000 holes in one URL, each filled with 20 kB: 2 GB from 520 kB
  h <- ref_hostile(list(list(key = "v/{{i}}", url = strrep("{{t}}", 1e5), dimensions = list(i = list(stop = 2)))),
                   list(t = strrep("x", 20000)))
  before <- hostile_snapshot(h$dir, except = h$store)
  e <- expect_error(open_zarr(h$store), class = "zarr_error_metadata")
  expect_match(conditionMessage(e), "templates.*zarr.max_decoded_bytes")
  peak <- hostile_peak(sprintf("open_zarr('%s')", h$store), timeout = 60)
  expect_identical(peak$class, "zarr_error_metadata")
  expect_lt(peak$mb, 256)
  expect_identical(hostile_touch(h$store), "zarr_error_metadata")
  expect_outside_unchanged(before, h$dir, except = h$store)
})

# Parquet references (fsspec's layout) in a hostile_dir(): .zmetadata with an
# array `x` of `shape` in chunks of 1 and `record_size`, and refs.0.parq of
# `rows` rows pointing into data.bin.
parq_hostile <- function(shape, record_size, rows, env = parent.frame()) {
  h <- hostile_dir(env, store = "refs")
  dir.create(file.path(h$store, "x"), recursive = TRUE)
  zarray <- list(zarr_format = 2, shape = list(shape), chunks = list(1), compressor = NULL, dtype = "|u1", order = "C",
                 filters = NULL, fill_value = 0)
  jsonlite::write_json(list(metadata = list(.zgroup = list(zarr_format = 2), `x/.zarray` = zarray), record_size = record_size),
                       file.path(h$store, ".zmetadata"), auto_unbox = TRUE, null = "null", digits = NA)
  writeBin(as.raw(1:8), file.path(h$store, "data.bin"))
  df <- data.frame(path = rep("data.bin", rows), offset = seq_len(rows) %% 8, size = rep(1, rows))
  nanoparquet::write_parquet(df, file.path(h$store, "x", "refs.0.parq"))
  h
}

test_that("Parquet references: a huge shape asks only for the files there, and files hold no more rows than a record", {
  skip_if_not_installed("nanoparquet")
  skip_without_proc_status()
  # 10^15 chunks in records of one: 10^15 files named, one there
  h <- parq_hostile(1e15, 1, 1)
  before <- hostile_snapshot(h$dir, except = h$store)
  z <- open_zarr(h$store)
  expect_identical(z$store$list_prefix("x/"), c("x/.zarray", "x/0"))
  expect_identical(z[["/x"]][1:2], as.integer(c(2, 0)))
  expect_identical(hostile_touch(h$store), "zarr_error_memory") # (reading all 10^15 values)
  peak <- hostile_peak(sprintf("z <- open_zarr('%s'); z[['/x']][1:2]", h$store), timeout = 60)
  expect_identical(peak$class, "")
  expect_lt(peak$mb, 256)
  expect_outside_unchanged(before, h$dir, except = h$store)
  # a file of more rows than the record size
  h <- parq_hostile(100, 10, 50)
  e <- expect_error(open_zarr(h$store), class = "zarr_error_metadata")
  expect_match(conditionMessage(e), "50 rows, more than the record size 10")
  expect_identical(hostile_touch(h$store), "zarr_error_metadata")
  # rows beyond the budget, refused before they are read
  h <- parq_hostile(1e5, 1e5, 1e5)
  withr::local_options(zarr.max_decoded_bytes = 2^24)
  e <- expect_error(open_zarr(h$store), class = "zarr_error_metadata")
  expect_match(conditionMessage(e), "zarr.max_decoded_bytes")
})

# ---- JSON of consolidated metadata and references ------------------------------

test_that("consolidated metadata and reference documents are estimated before they are parsed", {
  skip_without_proc_status()
  # 300,000 empty arrays in an attribute: 0.9 MB of text, about 20 MB parsed
  h <- hostile_dir(store = "c.zarr")
  dir.create(h$store)
  writeLines('{"zarr_format":2}', file.path(h$store, ".zgroup"))
  big <- paste0('{"zarr_consolidated_format":1,"metadata":{".zgroup":{"zarr_format":2},".zattrs":{"a":[',
                paste(rep("[]", 3e5), collapse = ","), "]}}}")
  writeLines(big, file.path(h$store, ".zmetadata"))
  before <- hostile_snapshot(h$dir, except = h$store)
  expect_s3_class(open_zarr(h$store), "zarr") # within the default budget
  withr::local_options(zarr.max_decoded_bytes = 2^24)
  e <- expect_error(open_zarr(h$store), class = "zarr_error_metadata")
  expect_identical(e$key, ".zmetadata")
  expect_match(conditionMessage(e), "consolidated metadata.*zarr.max_decoded_bytes")
  expect_identical(hostile_touch(h$store), "zarr_error_metadata")
  peak <- hostile_peak(sprintf("options(zarr.max_decoded_bytes = 2^24); open_zarr('%s')", h$store), timeout = 60)
  expect_identical(peak$class, "zarr_error_metadata")
  expect_lt(peak$mb, 256)
  expect_outside_unchanged(before, h$dir, except = h$store)
  # Kerchunk references: the same estimate
  r <- ref_hostile(list(list(key = "v/{{i}}", url = "{{f}}", dimensions = list(i = as.list(seq_len(3e5))))))
  e <- expect_error(open_zarr(r$store), class = "zarr_error_metadata")
  expect_match(conditionMessage(e), "references.*zarr.max_decoded_bytes")
})

test_that("consolidated metadata of many groups walks in linear time", {
  h <- hostile_dir(store = "c.zarr")
  dir.create(h$store)
  writeLines('{"zarr_format":2}', file.path(h$store, ".zgroup"))
  docs <- c(list(.zgroup = list(zarr_format = 2)),
            stats::setNames(rep(list(list(zarr_format = 2)), 4000), c(sprintf("g%d/.zgroup", 1:2000), sprintf("g%d/s/.zgroup", 1:2000))))
  jsonlite::write_json(list(zarr_consolidated_format = 1, metadata = docs), file.path(h$store, ".zmetadata"), auto_unbox = TRUE)
  z <- open_zarr(h$store, read_only = TRUE)
  expect_length(z$groups, 4001)
  idx <- consolidated_index(consolidated_map(z$root))
  expect_identical(sort(idx$kids[["p:g7/"]]), "s")
  expect_identical(consolidated_metadata_of(z[["/g7"]], "s"), consolidated_meta(consolidated_map(z$root)[["g7/s"]]))
  expect_identical(consolidated_metadata_of(z[["/g7"]], "s")$node_type, "group")
  expect_null(consolidated_metadata_of(z[["/g7"]], "t"))
})

test_that("an Icechunk spec 1 ref file is estimated before it is parsed", {
  h <- hostile_dir(store = "v1")
  file.copy(test_path("icechunk", "v1"), h$dir, recursive = TRUE)
  ref <- file.path(h$store, "refs", "branch.main", "ref.json")
  writeLines(sprintf('{"snapshot":"DJDTKHR0WFKK7QA1KRNG","x":[%s]}', paste(rep("[]", 2e5), collapse = ",")), ref)
  before <- hostile_snapshot(h$dir, except = h$store)
  expect_identical(open_zarr(h$store)$store$snapshot_id, "DJDTKHR0WFKK7QA1KRNG")
  withr::local_options(zarr.max_decoded_bytes = 2^20)
  e <- expect_error(open_zarr(h$store), class = "zarr_error_icechunk")
  expect_identical(e$key, "refs/branch.main/ref.json")
  expect_match(conditionMessage(e), "zarr.max_decoded_bytes")
  expect_identical(hostile_touch(h$store), "zarr_error_icechunk")
  expect_outside_unchanged(before, h$dir, except = h$store)
})

test_that("an array's chunk references over all its manifests stay within the budget", {
  ice <- ic_hostile_repo()
  meta <- '{"zarr_format":3,"node_type":"array","shape":[9000],"data_type":"uint8","chunk_grid":{"name":"regular","configuration":{"chunk_shape":[1]}},"chunk_key_encoding":{"name":"default"},"fill_value":0,"codecs":[{"name":"bytes"}]}'
  le32 <- function(x) writeBin(as.integer(x), raw(), size = 4L, endian = "little")
  mids <- lapply(1:3, function(k) as.raw(c(k, 1:11)))
  node_id <- as.raw(c(9, 1:7))
  mrefs <- lapply(1:3, function(k) fb_tbl(fb_struct(mids[[k]]), fb_blob(le32(c((k - 1) * 3000, k * 3000)), 8L)))
  root <- fb_tbl(fb_struct(as.raw(1:8)), fb_str("/"), fb_blob(charToRaw('{"zarr_format":3,"node_type":"group"}')), fb_u8(2L), fb_tbl())
  arr <- fb_tbl(fb_struct(node_id), fb_str("/a"), fb_blob(charToRaw(meta)), fb_u8(1L), fb_tbl(NULL, NULL, fb_vec(mrefs)))
  snap <- ic_object(fb_build(fb_tbl(fb_struct(as.raw(1:12)), NULL, fb_vec(list(root, arr)), fb_u64(0L), fb_str("x"))), 1L)
  s <- .Call(ffi_icechunk_snapshot, snap, "s", max_decoded_bytes())
  writeBin(snap, file.path(ice$store, "snapshots", "ZDP6C2RY2P7P1WJDESR0"))
  ids <- s$nodes$manifests[[2]]$id
  for (k in 1:3) {
    refs <- lapply((k - 1) * 3000 + 0:2999, function(i) fb_tbl(fb_blob(le32(i), 4L), fb_blob(as.raw(i %% 251))))
    man <- ic_object(fb_build(fb_tbl(fb_struct(raw(12)), fb_vec(list(fb_tbl(fb_struct(node_id), fb_vec(refs)))))), 2L)
    writeBin(man, file.path(ice$store, "manifests", ids[k]))
  }
  expect_identical(open_zarr(ice$store)[["/a"]][], as.integer((0:8999) %% 251))
  # each manifest (about 1 MB parsed) fits 2 MiB; the array's 9000 references do not
  withr::local_options(zarr.max_decoded_bytes = 2^21)
  z <- open_zarr(ice$store)
  e <- expect_error(z[["/a"]][], class = "zarr_error_icechunk")
  expect_match(conditionMessage(e), "9000 chunk references of array '/a'.*zarr.max_decoded_bytes")
})
