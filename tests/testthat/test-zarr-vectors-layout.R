# Zarr Vectors byte layouts, built byte by byte from the specification's
# description (section 7) and compared with what the package writes and reads.

u8 <- function(x) as.raw(x)
le16 <- function(x) writeBin(as.integer(x), raw(), size = 2, endian = "little")
le32u <- function(x) unlist(lapply(x, function(v) as.raw(c(v %% 256, v %/% 256 %% 256, v %/% 65536 %% 256, v %/% 16777216 %% 256))))
le64 <- function(x) unlist(lapply(x, function(v) { # two's complement for negative v
  lo <- v %% 2^32
  c(le32u(lo), le32u(((v - lo) / 2^32) %% 2^32))
}))
f64 <- function(x) writeBin(as.double(x), raw(), size = 8, endian = "little")
f32 <- function(x) writeBin(as.double(x), raw(), size = 4, endian = "little")

frag_parse <- function(b, nrows = NA_real_, budget = 2^30) .Call(zarr:::ffi_zv_frag_parse, b, nrows, "test", budget)
frag_encode <- function(is_range, start, count, offsets = 0, indices = numeric())
  .Call(zarr:::ffi_zv_frag_encode, is_range, as.numeric(start), as.numeric(count), as.numeric(offsets), as.numeric(indices))

# Three fragments: range [0, 5), explicit {1, 3, 7}, range [5, 7).
spec_fragments <- function() {
  c(le32u(0x5A564647), le16(1), le16(0), le32u(3), le32u(2), # header
    u8(0x05), raw(7),                                        # bitmap: fragments 0 and 2, padded to 8
    le64(c(0, 5)), le64(c(5, 2)),                            # range table
    le32u(c(0, 3)),                                          # explicit offsets (E + 1 = 2)
    le64(c(1, 3, 7)))                                        # explicit indices
}

test_that("a fragment index encodes byte for byte as section 7.3 describes", {
  b <- spec_fragments()
  expect_identical(b[1:4], charToRaw("GFVZ")) # 'ZVFG' as a little-endian uint32
  expect_identical(frag_encode(c(TRUE, FALSE, TRUE), c(0, 5), c(5, 2), c(0, 3), c(1, 3, 7)), b)
  f <- frag_parse(b, 8)
  expect_identical(f$is_range, c(TRUE, FALSE, TRUE))
  expect_equal(f$start, c(0, NA, 5))
  expect_equal(f$count, c(5, 3, 2))
  expect_equal(f$offsets, c(0, 5, 8, 10))
  expect_equal(f$rows, c(0:4, 1, 3, 7, 5, 6))
  # the empty index is its header alone
  e <- c(le32u(0x5A564647), le16(1), le16(0), le32u(0), le32u(0))
  expect_identical(frag_encode(logical(), numeric(), numeric()), e)
  expect_length(frag_parse(e)$is_range, 0L)
  # nine fragments: the bitmap takes two bytes, padded to eight
  b9 <- frag_encode(rep(TRUE, 9), 0:8, rep(1, 9))
  expect_identical(b9[17:24], as.raw(c(0xff, 0x01, 0, 0, 0, 0, 0, 0)))
  expect_length(b9, 16 + 8 + 9 * 16 + 4)
})

test_that("hostile fragment indexes are zarr_error_zv errors", {
  b <- spec_fragments()
  bad <- list(
    truncated_header = b[1:15],
    magic = replace(b, 1, as.raw(0x48)),
    version = replace(b, 5, as.raw(2)),
    flags = replace(b, 7, as.raw(1)),
    r_above_f = c(b[1:12], le32u(4), b[17:length(b)]),
    popcount = replace(b, 17, as.raw(0x07)),
    bitmap_past_end = b[1:20],
    ranges_past_end = b[1:40],
    offsets_past_end = b[1:58],
    offsets_decrease = c(b[1:56], le32u(c(2, 1)), le64(0)),
    offsets_not_from_zero = c(b[1:56], le32u(c(1, 3)), le64(c(1, 3, 7))),
    counts_past_end = c(b[1:56], le32u(c(0, 1000)), le64(c(1, 3, 7))),
    trailing = c(b, raw(8)),
    negative_start = c(b[1:24], le64(c(-1, 5)), b[41:length(b)]),
    negative_count = c(b[1:24], le64(c(0, -5)), b[41:length(b)]),
    negative_index = c(b[1:64], le64(c(1, -3, 7)))
  )
  for (nm in names(bad)) expect_error(frag_parse(bad[[nm]]), class = "zarr_error_zv", info = nm)
  # rows beyond the chunk's vertices
  expect_error(frag_parse(b, 7), class = "zarr_error_zv")
  expect_error(frag_parse(b, 6), class = "zarr_error_zv")
  expect_no_error(frag_parse(b, 8))
})

test_that("object manifests encode byte for byte as section 7.6 describes", {
  # object 0: chunk (0,0,0) fragment 2 (mode 0), chunk (1,0,0) fragments 0-1
  # (mode 1), chunk (0,1,0) fragments 0 and 3 (mode 2); object 1: empty;
  # object 2: chunk (-1,0,2) fragment 0
  rows <- data.frame(object = c(0, 0, 0, 0, 0, 2), x = c(0, 1, 1, 0, 0, -1), y = c(0, 0, 0, 1, 1, 0),
                     z = c(0, 0, 0, 0, 0, 2), fragment = c(2, 0, 1, 0, 3, 0))
  enc <- .Call(zarr:::ffi_zv_manifest_encode, rows$object, as.matrix(rows[c("x", "y", "z")]), rows$fragment, 3)
  obj0 <- c(le32u(3),
            le64(c(0, 0, 0)), u8(0), le64(2),
            le64(c(1, 0, 0)), u8(1), le64(c(0, 2)),
            le64(c(0, 1, 0)), u8(2), le32u(2), le64(c(0, 3)))
  obj1 <- le32u(0)
  obj2 <- c(le32u(1), le64(c(-1, 0, 2)), u8(0), le64(0))
  expect_identical(enc$data, c(obj0, obj1, obj2))
  expect_equal(enc$starts, c(0, length(obj0), length(obj0) + 4))
  m <- .Call(zarr:::ffi_zv_manifests, enc$data, enc$starts, c(0, 1, 2), 3L, "test", 2^30)
  expect_equal(m$object, c(0, 0, 0, 2))
  expect_identical(m$mode, c(0L, 1L, 2L, 0L))
  expect_equal(m$first, c(2, 0, 0, 0))
  expect_equal(m$count, c(1, 2, 2, 1))
  expect_equal(m$explicit, c(0, 3))
  expect_equal(unname(m$coords), rbind(c(0, 0, 0), c(1, 0, 0), c(0, 1, 0), c(-1, 0, 2)))
  # only object 2
  expect_equal(.Call(zarr:::ffi_zv_manifests, enc$data, enc$starts, 2, 3L, "test", 2^30)$object, 2)
})

test_that("hostile manifests are zarr_error_zv errors", {
  good <- c(le32u(2), le64(c(0, 0)), u8(1), le64(c(0, 2)), le64(c(1, 0)), u8(2), le32u(1), le64(4))
  man <- function(b, starts = 0, ids = 0) .Call(zarr:::ffi_zv_manifests, b, as.numeric(starts), as.numeric(ids), 2L, "test", 2^30)
  expect_no_error(man(good))
  bad <- list(
    short = le32u(0)[1:3],
    blocks_past_end = c(le32u(3), good[5:length(good)]),
    unknown_mode = replace(good, 4 + 16 + 1, as.raw(7)),
    explicit_past_end = c(good[1:(length(good) - 12)], le32u(1000), le64(4)),
    trailing = c(good, raw(1)),
    negative_fragment = c(good[1:(length(good) - 8)], le64(-4)),
    negative_count = c(le32u(1), le64(c(0, 0)), u8(1), le64(c(0, -2))),
    huge_range = c(le32u(1), le64(c(0, 0)), u8(1), le64(c(0, 2^40)))
  )
  for (nm in names(bad)) expect_error(man(bad[[nm]]), class = "zarr_error_zv", info = nm)
  expect_error(man(good, starts = length(good) + 1), class = "zarr_error_zv")
  expect_error(man(good, ids = 1), class = "zarr_error_zv")
  expect_error(man(c(good, good), starts = c(length(good), 0), ids = 0), class = "zarr_error_zv")
})

test_that("vertex, attribute and link rows are little-endian, row after row", {
  x <- rbind(c(1.5, -2, 3), c(4, 5.25, -6))
  b <- .Call(zarr:::ffi_zv_rows_encode, x, "float32", c(0, 2))[[1L]]
  expect_identical(b, f32(c(1.5, -2, 3, 4, 5.25, -6)))
  expect_identical(.Call(zarr:::ffi_zv_rows_encode, x, "float64", c(0, 1, 2)),
                   list(f64(c(1.5, -2, 3)), f64(c(4, 5.25, -6))))
  links <- rbind(c(0, 1), c(1, 2))
  expect_identical(.Call(zarr:::ffi_zv_rows_encode, links, "int64", c(0, 2))[[1L]], le64(c(0, 1, 1, 2)))
  m <- .Call(zarr:::ffi_zv_rows_decode, list(f32(c(1.5, -2, 3)), as.integer(f32(c(4, 5.25, -6)))), "float32", 3L, FALSE, "t", 1L, 2^30)
  expect_equal(unclass(m)[, ], x, ignore_attr = TRUE)
  expect_equal(as.numeric(attr(m, "rows")), c(1, 1))
  cols <- .Call(zarr:::ffi_zv_rows_decode, list(f32(c(1.5, -2, 3)), f32(c(4, 5.25, -6))), "float32", 3L, TRUE, "t", 2L, 2^30)
  expect_equal(unclass(cols), list(c(1.5, 4), c(-2, 5.25), c(3, -6)), ignore_attr = TRUE)
  expect_error(.Call(zarr:::ffi_zv_rows_decode, list(f32(1:4)), "float32", 3L, FALSE, "t", 1L, 2^30), class = "zarr_error_zv")
  expect_error(.Call(zarr:::ffi_zv_rows_decode, list(c(1L, 300L, 0L, 0L)), "float32", 1L, FALSE, "t", 1L, 2^30), class = "zarr_error_zv")
  expect_error(.Call(zarr:::ffi_zv_rows_decode, list(raw(4)), "float128", 1L, FALSE, "t", 1L, 2^30), class = "zarr_error_zv")
  expect_error(.Call(zarr:::ffi_zv_rows_encode, matrix(3e9), "int32", c(0, 1)), class = "zarr_error_value")
  expect_error(.Call(zarr:::ffi_zv_rows_encode, matrix(-1), "uint8", c(0, 1)), class = "zarr_error_value")
  expect_identical(.Call(zarr:::ffi_zv_rows_encode, matrix(c(-128, 255)), "int16", c(0, 2))[[1L]], le16(c(-128, 255)))
})

test_that("uint8 arrays read and write raw vectors (read_bytes())", {
  a <- create_zarr()$add_array("/", "b", define_array("uint8", 6))
  a[] <- as.raw(c(0, 1, 127, 128, 254, 255))
  expect_identical(a$read_bytes(), as.raw(c(0, 1, 127, 128, 254, 255)))
  expect_identical(a$read(fill_as_na = FALSE), c(0L, 1L, 127L, 128L, 254L, 255L))
  expect_identical(a$read_bytes(list(c(2, 3))), as.raw(c(1, 127)))
  expect_error(create_zarr()$add_array("/", "i", define_array("int16", 2))$read_bytes(), class = "zarr_error_value")
  expect_error(create_zarr()$add_array("/", "i", define_array("int16", 2))$write(raw(2), NULL), class = "zarr_error_value")
})

test_that("random damage to valid blobs gives zarr_error_zv or a valid parse, never a crash", {
  set.seed(22)
  b <- spec_fragments()
  man <- c(le32u(2), le64(c(0, 0)), u8(1), le64(c(0, 2)), le64(c(1, 0)), u8(2), le32u(1), le64(4))
  other <- 0L
  for (i in 1:1500) {
    for (blob in list(b, man)) {
      d <- blob
      if (runif(1) < 0.3) d <- d[seq_len(sample(length(d), 1) - 1)]
      else {
        at <- sample(length(d), sample(1:3, 1))
        d[at] <- as.raw(sample(0:255, length(at), TRUE))
      }
      r <- tryCatch({
        if (identical(blob, b)) frag_parse(d, 16) else .Call(zarr:::ffi_zv_manifests, d, 0, 0, 2L, "t", 2^30)
        "ok"
      }, zarr_error_zv = function(e) "zv", error = function(e) "other")
      other <- other + (r == "other")
    }
  }
  expect_identical(other, 0L)
})

test_that("the blobs the writer stores are the layouts above", {
  skip_if_not_installed("withr")
  path <- withr::local_tempfile(fileext = ".zarr")
  # chunk (0,0): objects 0 (2 vertices) and 1 (1 vertex); chunk (1,0): object 1
  v <- rbind(c(1, 1), c(2, 2), c(3, 3), c(12, 1))
  zv <- write_zarr_vectors(path, v, chunk_shape = c(10, 10), objects = c(0, 0, 1, 1), levels = 1L,
                           links = rbind(c(1, 2), c(3, 4)), dtype = "float64")
  bytes <- function(p) as.raw(zv$get_node(p)$read())
  expect_identical(bytes("0/vertices/0.0"), f64(c(1, 1, 2, 2, 3, 3)))
  expect_identical(bytes("0/vertices/1.0"), f64(c(12, 1)))
  expect_identical(bytes("0/vertex_fragments/0.0"),
                   c(le32u(0x5A564647), le16(1), le16(0), le32u(2), le32u(2), u8(0x03), raw(7),
                     le64(c(0, 2)), le64(c(2, 1)), le32u(0)))
  expect_identical(bytes("0/links/0/0.0"), le64(c(0, 1)))
  # link 3-4 crosses chunks: a record of (chunk, row) per endpoint
  expect_identical(bytes("0/cross_chunk_links/0/data"), le64(c(0, 0, 2, 1, 0, 0)))
  expect_identical(bytes("0/link_fragments/0.0"),
                   c(le32u(0x5A564647), le16(1), le16(0), le32u(2), le32u(2), u8(0x03), raw(7),
                     le64(c(0, 1)), le64(c(1, 0)), le32u(0)))
  obj0 <- c(le32u(1), le64(c(0, 0)), u8(0), le64(0))
  obj1 <- c(le32u(2), le64(c(0, 0)), u8(0), le64(1), le64(c(1, 0)), u8(0), le64(0))
  expect_identical(bytes("0/object_index/data"), c(obj0, obj1))
  expect_identical(bytes("0/object_index/offsets"), le64(c(0, length(obj0))))
  meta <- jsonlite::fromJSON(file.path(path, "0/links/0/0.0/zarr.json"), simplifyVector = FALSE)
  expect_identical(meta$codecs[[2]]$configuration$shuffle, "bitshuffle")
  expect_identical(meta$codecs[[2]]$configuration$cname, "zstd")
  expect_identical(meta$codecs[[2]]$configuration$clevel, 5L)
  meta <- jsonlite::fromJSON(file.path(path, "0/vertex_fragments/0.0/zarr.json"), simplifyVector = FALSE)
  expect_identical(meta$codecs[[2]]$configuration$shuffle, "shuffle")
  root <- jsonlite::fromJSON(file.path(path, "zarr.json"), simplifyVector = FALSE)
  expect_identical(root$attributes$zarr_vectors$chunk_shape, list(10L, 10L))
  expect_identical(root$attributes$multiscales[[1]]$datasets[[1]]$path, "0")
})
