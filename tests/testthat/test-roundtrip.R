# Writing data and reading it back: every data type, shape, chunking, store
# kind, storage order and key separator; NA, NaN, infinities and fill values.

all_dtypes <- c("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                "float16", "float32", "float64", "complex64", "complex128")

rt_shapes <- list(
  scalar = list(shape = integer(0), chunk = NULL),
  vector_edge = list(shape = 7, chunk = 3),           # 7 is not a multiple of 3
  matrix_edge = list(shape = c(5, 7), chunk = c(2, 3)),
  cube_big_chunk = list(shape = c(3, 4, 2), chunk = c(10, 10, 10)) # one chunk, larger than the array
)

test_that("every data type round-trips through memory and local stores in every shape", {
  for (kind in c("memory", "local")) {
    z_main <- new_test_zarr(kind)
    # uint64 arrays live in a store of their own: see the BUG test below
    z_u64 <- new_test_zarr(kind)
    for (dt in all_dtypes) {
      for (sn in names(rt_shapes)) {
        if (dt == "uint64") z <- z_u64 else z <- z_main
        s <- rt_shapes[[sn]]
        def <- define_array(dt, s$shape)
        if (!is.null(s$chunk)) def$chunk_shape <- s$chunk
        name <- paste(dt, sn, sep = "_")
        arr <- z$add_array("/", name, def)
        x <- dtype_array(dt, s$shape)
        arr$write(x)
        info <- paste(kind, name)
        expect_same_values(arr$read(), x)
        expect_identical(typeof(arr$read()), typeof(x), info = info)
        if (length(s$shape) > 1L) {
          expect_same_values(arr$read(lapply(s$shape, seq_len)), x)
        }
        expect_equal(arr$shape, as.numeric(s$shape), info = info)
        expect_identical(arr$data_type$data_type, dt, info = info)
      }
    }
    if (kind == "local") {
      # everything is persisted: reopen and read again
      z2 <- open_zarr(z_main$store$root)
      for (dt in setdiff(all_dtypes, "uint64")) for (sn in names(rt_shapes)) {
        x <- dtype_array(dt, rt_shapes[[sn]]$shape)
        expect_same_values(z2[[paste0("/", dt, "_", sn)]]$read(), x)
      }
      expect_length(partial_files(z_main$store$root), 0L)
      expect_length(partial_files(z_u64$store$root), 0L)
    }
  }
})

test_that("uint64 arrays with the default fill value can be reopened", {
  for (kind in c("memory", "local")) {
    z <- new_test_zarr(kind)
    arr <- z$add_array("/", "u", define_array("uint64", 3))
    v <- bit64::as.integer64(c("0", "9223372036854775807", "1"))
    arr$write(v)
    reopened <- if (kind == "local") open_zarr(z$store$root) else zarr$new(z$store)
    arr2 <- reopened[["/u"]]
    expect_s3_class(arr2, "zarr_array")
    expect_identical(arr2$data_type$fill_value, "18446744073709551615")
    expect_identical(as.character(arr2$read()), as.character(v))
  }
})

test_that("the R type of each data type is as documented", {
  z <- create_zarr()
  for (dt in all_dtypes) {
    arr <- z$add_array("/", dt, define_array(dt, 3))
    arr$write(dtype_values(dt, 3))
    out <- arr$read()
    if (zarr_rtype[[dt]] == "integer64") expect_s3_class(out, "integer64")
    else expect_identical(typeof(out), zarr_rtype[[dt]], info = dt)
    expect_identical(arr$data_type$Rtype, zarr_rtype[[dt]], info = dt)
  }
})

test_that("extreme integer values survive", {
  z <- create_zarr()
  cases <- list(
    int8 = c(-127L, 127L), int16 = c(-32767L, 32767L), int32 = c(-.Machine$integer.max, .Machine$integer.max),
    uint8 = c(0L, 254L), uint16 = c(0L, 65534L), uint32 = c(0, 4294967294)
  )
  for (dt in names(cases)) {
    arr <- z$add_array("/", dt, define_array(dt, 2))
    arr$write(cases[[dt]])
    expect_identical(arr$read(), cases[[dt]], info = dt)
  }
  arr <- z$add_array("/", "i64", define_array("int64", 3))
  v <- bit64::as.integer64(c("-9223372036854775807", "9223372036854775807", "-1"))
  arr$write(v)
  expect_identical(as.character(arr$read()), as.character(v))
  arr <- z$add_array("/", "u64", define_array("uint64", 2))
  v <- bit64::as.integer64(c("0", "9223372036854775807"))
  arr$write(v)
  expect_identical(as.character(arr$read()), as.character(v))
})

test_that("arrays of 4 to 6 dimensions with edge chunks round-trip, in R order and portable", {
  shapes <- list(c(3, 4, 2, 5), c(2, 3, 4, 2, 3), c(3, 4, 2, 5, 3, 2))
  chunks <- list(c(2, 3, 1, 2), c(1, 2, 3, 2, 2), c(2, 3, 1, 2, 2, 1))
  for (kind in c("memory", "local")) {
    z <- new_test_zarr(kind)
    for (k in seq_along(shapes)) {
      for (portable in c(FALSE, TRUE)) {
        for (dt in c("int32", "float64")) {
          x <- array(seq_len(prod(shapes[[k]])), shapes[[k]])
          if (dt == "float64") x <- x / 8
          def <- define_array(dt, shapes[[k]])
          def$chunk_shape <- chunks[[k]]
          def$portable <- portable
          expect_identical(def$portable, portable)
          name <- sprintf("d%d_%s_%s", length(shapes[[k]]), dt, if (portable) "c" else "r")
          arr <- z$add_array("/", name, def)
          arr$write(x)
          expect_identical(arr$read(), x, info = paste(kind, name))
          has_transpose <- any(vapply(arr$codecs, function(cd) cd$name == "transpose", TRUE))
          expect_identical(has_transpose, !portable)
        }
      }
    }
    if (kind == "local") {
      z2 <- open_zarr(z$store$root, read_only = TRUE)
      x <- array(seq_len(prod(shapes[[3]])), shapes[[3]])
      expect_identical(z2[["/d6_int32_c"]]$read(), x)
      expect_identical(z2[["/d6_int32_r"]]$read(), x)
      expect_identical(z2[["/d6_float64_c"]][2:3, , 1, c(5, 1), -2, 2], x[2:3, , 1, c(5, 1), -2, 2] / 8)
    }
  }
})

test_that("portable (C order) and R order chunks hold the same values in different byte order", {
  z <- create_zarr()
  x <- matrix(1:6, 3, 2)
  r_def <- define_array("int32", dim(x))
  r_def$remove_codec("zstd")
  c_def <- define_array("int32", dim(x))
  c_def$portable <- TRUE
  c_def$remove_codec("zstd")
  z$add_array("/", "r", r_def)$write(x)
  z$add_array("/", "c", c_def)$write(x)
  le <- function(v) writeBin(as.integer(v), raw(), size = 4, endian = "little")
  # R order: the chunk is R's column-major memory; C order: row-major
  expect_identical(z$store$get("r/c.0.0"), le(c(1, 2, 3, 4, 5, 6)))
  expect_identical(z$store$get("c/c.0.0"), le(c(1, 4, 2, 5, 3, 6)))
  expect_identical(z[["/r"]]$read(), x)
  expect_identical(z[["/c"]]$read(), x)
})

test_that("chunk_shape can be set and edge chunks are stored once each", {
  z <- create_zarr()
  def <- define_array("int16", c(10, 7))
  def$chunk_shape <- c(4, 3)
  cg <- def$chunk_shape
  expect_s3_class(cg, "chunk_grid_regular")
  expect_equal(cg$chunk_shape, c(4, 3))
  expect_equal(cg$chunk_grid, c(3, 3))
  arr <- z$add_array("/", "a", def)
  x <- matrix(seq_len(70), 10, 7)
  arr$write(x)
  expect_identical(arr$read(), x)
  keys <- setdiff(z$store$list_prefix("a"), "a/zarr.json")
  expect_setequal(keys, sprintf("a/c.%d.%d", rep(0:2, 3), rep(0:2, each = 3)))
  expect_equal(arr$chunking$chunk_shape, c(4, 3))
})

test_that("the default chunking is at most 100 per dimension", {
  def <- define_array("float64", c(250, 30, 1))
  expect_equal(def$chunk_shape$chunk_shape, c(100, 30, 1))
  z <- create_zarr()
  arr <- z$add_array("/", "a", def)
  x <- array(as.numeric(seq_len(250 * 30)), c(250, 30, 1))
  arr$write(x)
  expect_identical(arr$read(), x)
  expect_equal(arr$chunking$chunk_grid, c(3, 1, 1))
})

test_that("the local store uses '.' as its default chunk key separator", {
  path <- local_store_path()
  z <- create_zarr(path)
  expect_identical(z$store$separator, ".")
  def <- define_array("int32", c(4, 4))
  def$chunk_shape <- c(2, 2)
  arr <- z$add_array("/", "dot", def)
  arr$write(matrix(1:16, 4))
  expect_identical(arr$chunk_separator, ".")
  files <- list.files(file.path(path, "dot"))
  expect_setequal(files, c("zarr.json", "c.0.0", "c.0.1", "c.1.0", "c.1.1"))
  expect_identical(open_zarr(path)[["/dot"]]$read(), matrix(1:16, 4))
})

test_that("a '/' chunk key separator set in the metadata is honoured", {
  for (kind in c("memory", "local")) {
    z <- new_test_zarr(kind)
    def <- define_array("float64", c(4, 6))
    def$chunk_shape <- c(2, 4)
    meta <- def$metadata()
    meta$chunk_key_encoding <- list(name = "default", configuration = list(separator = "/"))
    arr <- z$add_array("/", "slash", meta)
    expect_identical(arr$chunk_separator, "/")
    x <- matrix(seq_len(24) / 4, 4, 6)
    arr$write(x)
    expect_identical(arr$read(), x)
    keys <- setdiff(z$store$list_prefix("slash"), "slash/zarr.json")
    expect_setequal(keys, sprintf("slash/c/%d/%d", rep(0:1, 2), rep(0:1, each = 2)))
    if (kind == "local") {
      root <- z$store$root
      expect_true(dir.exists(file.path(root, "slash", "c", "1")))
      z2 <- open_zarr(root)
      expect_identical(z2[["/slash"]]$chunk_separator, "/")
      expect_identical(z2[["/slash"]]$read(), x)
      meta_json <- jsonlite::read_json(file.path(root, "slash", "zarr.json"))
      expect_identical(meta_json$chunk_key_encoding$configuration$separator, "/")
    }
  }
})

test_that("as_zarr() converts R objects in memory, with a name, to a path and into a group", {
  x <- array(1:400, c(5, 20, 4))
  z <- as_zarr(x)
  expect_s3_class(z, "zarr")
  expect_s3_class(z$root, "zarr_array")
  expect_identical(z$arrays, "/")
  expect_identical(z[["/"]]$read(), x)
  expect_identical(z[["/"]][2:3, 19:20, 4], x[2:3, 19:20, 4])
  expect_identical(z[["/"]]$data_type$data_type, "int32")

  z <- as_zarr(x, name = "cube")
  expect_s3_class(z$root, "zarr_group")
  expect_identical(z$arrays, "/cube")
  expect_identical(z[["/cube"]]$read(), x)

  path <- local_store_path()
  z <- as_zarr(x, name = "cube", location = path)
  expect_true(file.exists(file.path(path, "cube", "zarr.json")))
  expect_identical(open_zarr(path)[["/cube"]]$read(), x)

  path2 <- local_store_path()
  m <- matrix(c(1.5, NA, -3, Inf), 2)
  z <- as_zarr(m, location = path2)
  expect_true(file.exists(file.path(path2, "zarr.json")))
  back <- open_zarr(path2)[["/"]]$read()
  expect_identical(back, m)

  g <- create_zarr()
  arr <- as_zarr(1:10, name = "v", location = g$root)
  expect_s3_class(arr, "zarr_array")
  expect_identical(arr$path, "/v")
  expect_identical(g[["/v"]]$read(), 1:10)
})

test_that("as_zarr() picks the data type from the R type", {
  cases <- list(
    list(x = c(TRUE, FALSE, TRUE), dt = "bool"),
    list(x = 1:3, dt = "int32"),
    list(x = c(1.5, 2, -1e10), dt = "float64"),
    list(x = c(1 + 2i, -3i), dt = "complex128"),
    list(x = bit64::as.integer64(c("1", "-9223372036854775807", "1099511627776")), dt = "int64")
  )
  for (cs in cases) {
    arr <- as_zarr(cs$x)[["/"]]
    expect_identical(arr$data_type$data_type, cs$dt)
    expect_same_values(arr$read(), cs$x)
  }
})

test_that("as_zarr() keeps the names of dimnames as dimension names", {
  x <- matrix(1:6, 2, dimnames = list(rows = NULL, cols = NULL))
  arr <- as_zarr(x)[["/"]]
  expect_identical(arr$dimension_names, c("rows", "cols"))
  expect_null(dimnames(arr$read()))
  withr::local_options(zarr.dimnames = TRUE)
  out <- arr$read()
  expect_identical(names(dimnames(out)), c("rows", "cols"))
  expect_identical(unname(out), unname(x))
})

test_that("NA round-trips for every data type that can hold it", {
  for (kind in c("memory", "local")) {
    z <- new_test_zarr(kind)
    for (dt in setdiff(all_dtypes, "bool")) {
      x <- dtype_values(dt, 6)
      x[c(2, 5)] <- NA
      def <- define_array(dt, 6)
      def$chunk_shape <- 4
      arr <- z$add_array("/", dt, def)
      arr$write(x)
      out <- arr$read()
      expect_identical(which(is.na(out)), c(2L, 5L), info = paste(kind, dt))
      expect_same_values(out[-c(2, 5)], x[-c(2, 5)])
    }
  }
})

test_that("NA stays NA (not NaN) for int, float32, float64 and complex128", {
  z <- create_zarr()
  for (dt in c("int8", "int16", "int32", "uint8", "uint16", "uint32", "float32", "float64")) {
    arr <- z$add_array("/", dt, define_array(dt, 3))
    x <- dtype_values(dt, 3)
    x[2] <- NA
    arr$write(x)
    out <- arr$read()
    expect_true(is.na(out[2]), info = dt)
    expect_false(is.nan(out[2]), info = dt)
  }
  arr <- z$add_array("/", "c128", define_array("complex128", 3))
  arr$write(c(1 + 1i, NA, 0i))
  expect_identical(arr$read(), c(1 + 1i, NA, 0i))
})

test_that("bool arrays store NA as FALSE, as documented", {
  arr <- as_zarr(c(TRUE, NA, FALSE))[["/"]]
  expect_identical(arr$read(), c(TRUE, FALSE, FALSE))
})

test_that("NaN, Inf and -Inf survive in float16, float32 and float64, apart from NA", {
  for (kind in c("memory", "local")) {
    z <- new_test_zarr(kind)
    for (dt in c("float32", "float64")) {
      arr <- z$add_array("/", dt, define_array(dt, 7))
      x <- c(NA, NaN, Inf, -Inf, 1.5, 0, -0.25)
      arr$write(x)
      out <- arr$read()
      expect_identical(out, x, info = paste(kind, dt))
      expect_identical(is.nan(out), c(FALSE, TRUE, FALSE, FALSE, FALSE, FALSE, FALSE))
      expect_identical(arr$read(fill_as_na = FALSE), x)
    }
    arr <- z$add_array("/", "f16", define_array("float16", 5))
    arr$write(c(NaN, Inf, -Inf, 65504, -65504))
    out <- arr$read()
    expect_true(is.nan(out[1]))
    expect_identical(out[2:5], c(Inf, -Inf, 65504, -65504))
  }
})

test_that("complex values keep NaN and infinite parts", {
  z <- create_zarr()
  for (dt in c("complex64", "complex128")) {
    arr <- z$add_array("/", dt, define_array(dt, 3))
    x <- complex(real = c(Inf, 1, -Inf), imaginary = c(0, -Inf, 2.5))
    arr$write(x)
    expect_identical(arr$read(), x, info = dt)
  }
})

test_that("unwritten regions read as NA, or as the fill value on request", {
  z <- create_zarr()
  fills <- list(int8 = -128L, int16 = -32768L, uint8 = 255L, uint16 = 65535L, uint32 = 4294967295)
  for (dt in names(fills)) {
    def <- define_array(dt, 10)
    def$chunk_shape <- 4
    arr <- z$add_array("/", dt, def)
    arr$write(c(1L, 2L, 3L))
    expect_identical(arr$read(), methods::as(c(1, 2, 3, rep(NA, 7)), typeof(fills[[dt]])), info = dt)
    expect_identical(arr$read(fill_as_na = FALSE),
                     methods::as(c(1, 2, 3, rep(fills[[dt]], 7)), typeof(fills[[dt]])), info = dt)
    withr::local_options(zarr.fill_as_na = FALSE)
    expect_identical(arr$read(), methods::as(c(1, 2, 3, rep(fills[[dt]], 7)), typeof(fills[[dt]])), info = dt)
    expect_identical(arr[4:5], rep(fills[[dt]], 2), info = dt)
    withr::local_options(zarr.fill_as_na = TRUE)
    expect_identical(arr[4:5], methods::as(c(NA, NA), typeof(fills[[dt]])), info = dt)
  }
  # int32: the default fill is R's own NA_integer_
  arr <- z$add_array("/", "i32", define_array("int32", 5))
  arr$write(1:2)
  expect_identical(arr$read(), c(1L, 2L, NA, NA, NA))
  # float: the default fill NaN reads as NaN, which is.na() too
  arr <- z$add_array("/", "f64", define_array("float64", c(3, 3)))
  arr$write(matrix(1.5, 2, 2))
  out <- arr$read()
  expect_identical(out[1:2, 1:2], matrix(1.5, 2, 2))
  expect_true(all(is.na(out[3, ])))
  expect_true(all(is.na(out[, 3])))
  # a never-written array
  arr <- z$add_array("/", "empty", define_array("int16", c(2, 2)))
  expect_identical(arr$read(), matrix(NA_integer_, 2, 2))
  expect_identical(arr$read(fill_as_na = FALSE), matrix(-32768L, 2, 2))
})

test_that("zeros survive in integer arrays with the default fill value", {
  z <- create_zarr()
  for (dt in c("int8", "int16", "int32", "uint8", "uint16")) {
    arr <- z$add_array("/", dt, define_array(dt, 4))
    arr$write(c(0L, 0L, 1L, 0L))
    expect_identical(arr$read(), c(0L, 0L, 1L, 0L), info = dt)
  }
  arr <- z$add_array("/", "u32", define_array("uint32", 2))
  arr$write(c(0, 0))
  expect_identical(arr$read(), c(0, 0))
  arr <- z$add_array("/", "i64", define_array("int64", 2))
  arr$write(bit64::as.integer64(c(0, 0)))
  expect_identical(as.character(arr$read()), c("0", "0"))
})

test_that("a custom fill value reads as NA by default and as itself with fill_as_na = FALSE", {
  z <- create_zarr()
  def <- define_array("int32", 5)
  def$fill_value <- -9999L
  arr <- z$add_array("/", "a", def)
  arr$write(c(7L, -9999L, NA))
  expect_identical(arr$read(), c(7L, NA, NA, NA, NA))
  expect_identical(arr$read(fill_as_na = FALSE), c(7L, -9999L, -9999L, -9999L, -9999L))
  withr::local_options(zarr.fill_as_na = FALSE)
  expect_identical(arr$read(), c(7L, -9999L, -9999L, -9999L, -9999L))
  expect_identical(arr[2:3], c(-9999L, -9999L))

  def <- define_array("float64", 3)
  def$fill_value <- -999
  arr <- z$add_array("/", "f", def)
  arr$write(1.25)
  expect_identical(arr$read(fill_as_na = TRUE), c(1.25, NA, NA))
  expect_identical(arr$read(fill_as_na = FALSE), c(1.25, -999, -999))
})

test_that("scalar (0-d) arrays round-trip", {
  for (kind in c("memory", "local")) {
    z <- new_test_zarr(kind)
    arr <- z$add_array("/", "s", define_array("float64", integer(0)))
    expect_length(arr$shape, 0L)
    expect_true(is.na(arr$read()))
    arr$write(pi)
    expect_identical(arr$read(), pi)
    expect_identical(arr[], pi)
    arr[] <- -2.5
    expect_identical(arr$read(), -2.5)
    if (kind == "local") {
      expect_true(file.exists(file.path(z$store$root, "s", "c")))
      expect_identical(open_zarr(z$store$root)[["/s"]]$read(), -2.5)
    }
  }
})

test_that("data written without a selection starts at the origin", {
  arr <- as_zarr(matrix(0L, 4, 4))[["/"]]
  arr$write(matrix(9L, 2, 3))
  expected <- matrix(0L, 4, 4)
  expected[1:2, 1:3] <- 9L
  expect_identical(arr$read(), expected)
  # a plain vector of the full length fills a matrix in column-major order
  arr$write(1:16)
  expect_identical(arr$read(), matrix(1:16, 4))
})

test_that("partial writes spanning several chunks persist in a local store", {
  path <- local_store_path()
  z <- create_zarr(path)
  def <- define_array("float64", c(9, 11))
  def$chunk_shape <- c(4, 3)
  arr <- z$add_array("/", "a", def)
  expected <- matrix(NA_real_, 9, 11)
  arr$write(matrix(1, 3, 5), selection = list(3:5, 2:6))
  expected[3:5, 2:6] <- 1
  arr[8:9, c(11, 1)] <- c(-1, -2, -3, -4)
  expected[8:9, c(11, 1)] <- c(-1, -2, -3, -4)
  arr[, 7] <- 0.5
  expected[, 7] <- 0.5
  expect_identical(arr$read(), expected)
  expect_identical(open_zarr(path)[["/a"]]$read(), expected)
  expect_length(partial_files(path), 0L)
})

test_that("results do not depend on the number of threads", {
  x <- array(as.numeric(seq_len(60 * 70 * 3)), c(60, 70, 3))
  def <- define_array("float64", dim(x))
  def$chunk_shape <- c(7, 9, 2)
  z <- create_zarr()
  arr <- z$add_array("/", "a", def)
  withr::with_options(list(zarr.num_threads = 1), arr$write(x))
  one <- withr::with_options(list(zarr.num_threads = 1), arr[c(60, 1:30), -5, 3:1])
  four <- withr::with_options(list(zarr.num_threads = 4), arr[c(60, 1:30), -5, 3:1])
  expect_identical(one, x[c(60, 1:30), -5, 3:1])
  expect_identical(four, one)
  withr::with_options(list(zarr.num_threads = 4), arr$write(x * 2))
  expect_identical(withr::with_options(list(zarr.num_threads = 1), arr$read()), x * 2)
})

test_that("the zarr.int64 option returns 64-bit integers as double", {
  z <- create_zarr()
  arr <- z$add_array("/", "a", define_array("int64", 3))
  withr::local_options(zarr.int64 = "double")
  arr$write(c(1, -2, 2^40))
  out <- arr$read()
  expect_type(out, "double")
  expect_false(inherits(out, "integer64"))
  expect_identical(out, c(1, -2, 2^40))
})

test_that("the zarr.int64 option can be changed after the array was first used", {
  arr <- as_zarr(bit64::as.integer64(c(1, 2, 3)))[["/"]] # as_zarr writes, which caches the spec
  expect_s3_class(arr$read(), "integer64")
  withr::local_options(zarr.int64 = "double")
  expect_identical(arr$data_type$Rtype, "double")
  expect_identical(arr$read(), c(1, 2, 3))
})

test_that("sharded arrays are written and read back, also by partial writes", {
  for (kind in c("memory", "local")) {
    z <- if (kind == "memory") create_zarr() else create_zarr(local_store_path())
    set.seed(11)
    x <- array(rnorm(13 * 11 * 3), c(13, 11, 3))
    d <- define_array("float64", dim(x))
    d$chunk_shape <- c(6, 4, 3)
    d$add_codec("crc32c")
    d$add_codec("sharding_indexed", list(chunk_shape = c(3, 2, 1)))
    expect_identical(d$codec_info$name, "sharding_indexed")
    a <- z$add_array("/", "s", d)
    a$write(x)
    expect_identical(a[, , ], x, info = kind)
    a[2:9, 3:5, 2] <- 0
    x[2:9, 3:5, 2] <- 0
    expect_identical(zarr$new(z$store)[["/s"]][, , ], x, info = kind)
    # index at the start, big-endian inner chunks, a 1-d array
    d <- define_array("int32", 17)
    d$chunk_shape <- 8
    d$add_codec("bytes", list(endian = "big"))
    d$add_codec("sharding_indexed", list(chunk_shape = 2, index_location = "start"))
    b <- z$add_array("/", "t", d)
    v <- c(1:10, NA, 12:17)
    b$write(v)
    expect_identical(b[], v, info = kind)
    b[c(1, 17)] <- c(-1L, -17L)
    v[c(1, 17)] <- c(-1L, -17L)
    expect_identical(zarr$new(z$store)[["/t"]][], v, info = kind)
    # shards with nothing but the fill value are not stored
    keys <- z$store$list_prefix("t/")
    b[1:17] <- NA
    expect_true(all(is.na(b[])))
    expect_length(setdiff(z$store$list_prefix("t/"), "t/zarr.json"), 0L)
    expect_gt(length(keys), 1L)
  }
})

test_that("chunks that are contiguous in the result decode straight into it", {
  z <- create_zarr()
  set.seed(2)
  m <- matrix(runif(300 * 40), 300)
  for (codec in c("zstd", "blosc", "gzip")) {
    d <- define_array("float64", dim(m))
    d$chunk_shape <- c(300, 7) # whole columns: each chunk is one run of the result
    d$remove_codec("zstd")
    d$add_codec(codec)
    a <- z$add_array("/", codec, d)
    a$write(m)
    expect_identical(a[, ], m, info = codec)
    expect_identical(a[, 8:21], m[, 8:21], info = codec)       # whole chunks inside the selection
    expect_identical(a[2:300, 1:40], m[2:300, 1:40], info = codec) # none whole
    v <- z$add_array("/", paste0(codec, "_v"), {
      d <- define_array("int32", 1000); d$chunk_shape <- 100; d$remove_codec("zstd"); d$add_codec(codec); d
    })
    v$write(1:1000)
    expect_identical(v[], 1:1000, info = codec)
  }
})

test_that("NA strings are written as the fill value and read back as NA, also a long fill", {
  for (fill in c("", "none", strrep("\u00e9x", 60))) {
    z <- create_zarr()
    d <- define_array("string", 6)
    d$chunk_shape <- 3
    d$fill_value <- fill
    a <- z$add_array("/", "s", d)
    # "" marks nothing as missing: NA is written as "" (with a warning) and reads as ""
    if (nzchar(fill)) a$write(c("a", NA, "b", fill, "c", "d"))
    else expect_warning(a$write(c("a", NA, "b", fill, "c", "d")), class = "zarr_warning_na")
    expect_identical(a[], c("a", if (nzchar(fill)) c(NA, "b", NA) else c("", "b", ""), "c", "d"), info = nchar(fill))
    expect_identical(a$read(fill_as_na = FALSE), c("a", fill, "b", fill, "c", "d"), info = nchar(fill))
    suppressWarnings(a[4:6] <- NA) # a chunk of nothing but the fill value
    expect_identical(a$read(fill_as_na = FALSE), c("a", fill, "b", fill, fill, fill))
  }
})
