# Metadata documents, attributes, the group hierarchy and printing.

meta_text <- function(store, prefix) {
  key <- if (nzchar(prefix)) paste0(prefix, "/zarr.json") else "zarr.json"
  rawToChar(store$get(key))
}

test_that("the zarr.json of a 1-d array keeps shape and chunk shape as JSON arrays", {
  for (kind in c("memory", "local")) {
    z <- new_test_zarr(kind)
    z$add_array("/", "x", define_array("float64", 500))
    txt <- meta_text(z$store, "x")
    expect_match(txt, "\"shape\": [500]", fixed = TRUE)
    expect_match(txt, "\"chunk_shape\": [100]", fixed = TRUE)
    expect_match(txt, "\"zarr_format\": 3", fixed = TRUE)
    expect_match(txt, "\"node_type\": \"array\"", fixed = TRUE)
    expect_match(txt, "\"data_type\": \"float64\"", fixed = TRUE)
    expect_match(txt, "\"attributes\": {}", fixed = TRUE)
    meta <- jsonlite::parse_json(txt)
    expect_identical(meta$shape, list(500L))
    expect_identical(meta$chunk_grid, list(name = "regular", configuration = list(chunk_shape = list(100L))))
    expect_identical(meta$chunk_key_encoding, list(name = "default", configuration = list(separator = ".")))
    if (kind == "local") {
      expect_identical(paste0(paste(readLines(file.path(z$store$root, "x", "zarr.json")), collapse = "\n"), "\n"), txt)
    }
  }
  z <- create_zarr()
  z$add_array("/", "s", define_array("int16", integer(0)))
  txt <- meta_text(z$store, "s")
  expect_match(txt, "\"shape\": []", fixed = TRUE)
  z$add_array("/", "m", define_array("int16", c(3, 1)))
  expect_match(meta_text(z$store, "m"), "\"shape\": [3, 1]", fixed = TRUE)
})

test_that("the metadata of a group is a small JSON object", {
  z <- create_zarr()
  z$add_group("/", "g")
  meta <- jsonlite::parse_json(meta_text(z$store, "g"))
  expect_identical(meta, list(zarr_format = 3L, node_type = "group", attributes = setNames(list(), character())))
  expect_match(meta_text(z$store, ""), "\"attributes\": {}", fixed = TRUE)
  expect_identical(z$version, 3L)
})

test_that("NaN and infinite fill values are written as strings and read back", {
  for (kind in c("memory", "local")) {
    z <- new_test_zarr(kind)
    fills <- list(nan = NaN, inf = Inf, ninf = -Inf)
    spelled <- c(nan = "NaN", inf = "Infinity", ninf = "-Infinity")
    for (dt in c("float32", "float64")) {
      for (nm in names(fills)) {
        def <- define_array(dt, 3)
        def$fill_value <- fills[[nm]]
        name <- paste(dt, nm, sep = "_")
        z$add_array("/", name, def)
        txt <- meta_text(z$store, name)
        expect_match(txt, sprintf("\"fill_value\": \"%s\"", spelled[[nm]]), fixed = TRUE)
        expect_identical(jsonlite::parse_json(txt)$fill_value, spelled[[nm]])
      }
    }
    z2 <- if (kind == "local") open_zarr(z$store$root) else zarr$new(z$store)
    for (dt in c("float32", "float64")) {
      expect_identical(z2[[paste0("/", dt, "_inf")]]$read(fill_as_na = FALSE), rep(Inf, 3))
      expect_identical(z2[[paste0("/", dt, "_ninf")]]$read(fill_as_na = FALSE), rep(-Inf, 3))
      expect_true(all(is.nan(z2[[paste0("/", dt, "_nan")]]$read(fill_as_na = FALSE))))
      expect_identical(z2[[paste0("/", dt, "_inf")]]$read(), rep(NA_real_, 3))
    }
  }
})

test_that("integer fill values are written as plain JSON numbers", {
  z <- create_zarr()
  z$add_array("/", "i32", define_array("int32", 2))
  z$add_array("/", "i64", define_array("int64", 2))
  z$add_array("/", "u8", define_array("uint8", 2))
  z$add_array("/", "b", define_array("bool", 2))
  def <- define_array("float64", 2)
  def$fill_value <- 0.1
  z$add_array("/", "f", def)
  expect_match(meta_text(z$store, "i32"), "\"fill_value\": -2147483648,", fixed = TRUE)
  expect_match(meta_text(z$store, "i64"), "\"fill_value\": -9223372036854775808,", fixed = TRUE)
  expect_match(meta_text(z$store, "u8"), "\"fill_value\": 255,", fixed = TRUE)
  expect_match(meta_text(z$store, "b"), "\"fill_value\": false,", fixed = TRUE)
  expect_match(meta_text(z$store, "f"), "\"fill_value\": 0.1,", fixed = TRUE)
  z2 <- zarr$new(z$store)
  expect_identical(z2[["/i64"]]$data_type$fill_value, "-9223372036854775808")
  expect_equal(z2[["/f"]]$data_type$fill_value, 0.1)
})

test_that("attributes are set, read, deleted and persisted", {
  path <- local_store_path()
  z <- create_zarr(path)
  arr <- z$add_array("/", "x", define_array("float64", 5))
  arr$set_attribute("units", "m")
  arr$set_attribute("valid_range", c(-1.5, 2.5))
  arr$set_attribute("flag", TRUE)
  arr$set_attribute("ids", 1:3)
  arr$set_attribute("names", c("a", "b"))
  arr$set_attribute("nested", list(a = 1.5, b = "x"))
  expect_identical(arr$attributes$units, "m")
  expect_identical(arr$attributes$valid_range, c(-1.5, 2.5))
  expect_identical(arr$attributes$flag, TRUE)
  expect_identical(arr$attributes$ids, 1:3)
  expect_identical(arr$attributes$names, c("a", "b"))
  expect_identical(arr$attributes$nested, list(a = 1.5, b = "x"))
  # saved right away
  meta <- jsonlite::read_json(file.path(path, "x", "zarr.json"))
  expect_identical(meta$attributes$units, "m")
  expect_identical(meta$attributes$valid_range, list(-1.5, 2.5))
  expect_match(meta_text(z$store, "x"), "\"units\": \"m\"", fixed = TRUE)
  # overwrite and delete
  arr$set_attribute("units", "km")
  arr$delete_attributes(c("flag", "names", "not_there"))
  expect_identical(names(arr$attributes), c("units", "valid_range", "ids", "nested"))
  expect_identical(arr$attributes$units, "km")
  # reopen
  a2 <- open_zarr(path)[["/x"]]
  expect_identical(a2$attributes$units, "km")
  expect_identical(a2$attributes$valid_range, c(-1.5, 2.5))
  expect_identical(a2$attributes$ids, 1:3)
  expect_equal(a2$attributes$nested, list(a = 1.5, b = "x"))
  expect_false("flag" %in% names(a2$attributes))
  arr$delete_attributes(names(arr$attributes))
  expect_length(arr$attributes, 0L)
  expect_match(meta_text(z$store, "x"), "\"attributes\": {}", fixed = TRUE)
  expect_length(open_zarr(path)[["/x"]]$attributes, 0L)
})

test_that("groups and the root have attributes too", {
  path <- local_store_path()
  z <- create_zarr(path)
  z$root$set_attribute("title", "test data")
  g <- z$add_group("/", "g")
  g$set_attribute("count", 3L)
  z2 <- open_zarr(path)
  expect_identical(z2$root$attributes$title, "test data")
  expect_identical(z2[["/g"]]$attributes$count, 3L)
  expect_output(print(z2), "title")
})

test_that("invalid attribute names are argument errors", {
  arr <- as_zarr(1:3)[["/"]]
  for (nm in c("1bad", "bad name", "", "-ab", "a:-b", NA)) {
    expect_error(arr$set_attribute(nm, 1), class = "zarr_error_argument", info = nm)
  }
  expect_error(arr$set_attribute(c("a", "b"), 1), class = "zarr_error_argument")
  expect_error(arr$attributes <- list(a = 1), class = "zarr_error_read_only")
  expect_length(arr$attributes, 0L)
})

test_that("hyphenated attribute names, as anndata writes them, can be set", {
  z <- create_zarr()
  g <- z$add_group("/", "g")
  g$set_attribute("encoding-type", "dataframe")
  g$set_attribute("column-order", list("a", "b"))
  expect_match(meta_text(z$store, "g"), "\"encoding-type\": \"dataframe\"", fixed = TRUE)
  back <- zarr$new(z$store)[["/g"]]$attributes
  expect_identical(back[["encoding-type"]], "dataframe")
  expect_identical(back[["column-order"]], c("a", "b"))
})

test_that("an empty character vector attribute stays empty", {
  z <- create_zarr()
  g <- z$add_group("/", "g")
  g$set_attribute("none", character(0))
  expect_match(meta_text(z$store, "g"), "\"none\": []", fixed = TRUE)
  expect_length(zarr$new(z$store)[["/g"]]$attributes$none, 0L)
})

test_that("dimension names are stored and decorate what is read", {
  path <- local_store_path()
  z <- create_zarr(path)
  arr <- z$add_array("/", "m", define_array("int32", c(2, 3)))
  arr$write(matrix(1:6, 2))
  arr$dimension_names <- c("lat", "lon")
  meta <- jsonlite::read_json(file.path(path, "m", "zarr.json"))
  expect_identical(meta$dimension_names, list("lat", "lon"))
  expect_null(dimnames(open_zarr(path)[["/m"]]$read())) # bare arrays by default
  withr::local_options(zarr.dimnames = TRUE)
  out <- open_zarr(path)[["/m"]]$read()
  expect_identical(names(dimnames(out)), c("lat", "lon"))
  expect_identical(unname(out), matrix(1:6, 2))
  arr$dimension_names <- c("lat", NA)
  expect_identical(open_zarr(path)[["/m"]]$dimension_names, c("lat", NA))
  expect_error(arr$dimension_names <- "one", class = "zarr_error_argument")
  arr$dimension_names <- NULL
  expect_null(open_zarr(path)[["/m"]]$dimension_names)
})

test_that("groups nest, list their content and are found by path", {
  for (kind in c("memory", "local")) {
    z <- new_test_zarr(kind)
    g <- z$add_group("/", "g")
    expect_s3_class(g, "zarr_group")
    expect_identical(g$path, "/g")
    expect_identical(g$name, "g")
    sub <- z$add_group("/g", "sub")
    expect_identical(sub$path, "/g/sub")
    sp <- z$add_group("/", "with space")
    expect_identical(sp$path, "/with space")
    deep <- sub$add_group("deeper")
    expect_identical(deep$path, "/g/sub/deeper")
    z$add_array("/", "x", define_array("int32", 3))$write(1:3)
    z$add_array("/g/sub", "y", define_array("float64", c(2, 2)))$write(matrix(0.5, 2, 2))
    g$add_array("z", define_array("int16", 2))
    z$add_array("/with space", "a b", define_array("uint8", 1))$write(7L)

    expect_setequal(z$groups, c("/", "/g", "/g/sub", "/g/sub/deeper", "/with space"))
    expect_setequal(z$arrays, c("/x", "/g/sub/y", "/g/z", "/with space/a b"))
    expect_setequal(g$groups, c("/g", "/g/sub", "/g/sub/deeper"))
    expect_setequal(g$arrays, c("/g/sub/y", "/g/z"))
    expect_identical(z[["/g"]]$path, "/g")
    expect_identical(z[["/g"]][["sub"]]$path, "/g/sub")
    expect_identical(z[["/g"]][["sub/y"]]$path, "/g/sub/y")
    expect_identical(z[["/g/sub/y"]]$read(), matrix(0.5, 2, 2))
    expect_identical(z[["/with space/a b"]]$read(), 7L)
    expect_identical(z[["/"]]$path, "/")
    expect_null(z[["/nope"]])
    expect_null(z[["/g/nope/deeper"]])
    expect_null(g[["nope"]])
    expect_null(z[["/x/below_an_array"]])
    expect_identical(sub$get_node("../../x")$path, "/x")
    expect_identical(sub[["../z"]]$path, "/g/z")
    expect_identical(sub$get_node("y")$path, "/g/sub/y")
    expect_identical(sub$get_node(".")$path, "/g/sub")
    expect_identical(z[["/g/sub/../z"]]$path, "/g/z")
    expect_null(z$root$get_node(".."))
    expect_identical(sub$parent$path, "/g")
    expect_null(z$root$parent)
    expect_identical(z$root$count_arrays(), 4L)
    expect_identical(z$root$count_arrays(recursive = FALSE), 1L)
    expect_identical(g$count_arrays(), 2L)
    expect_identical(deep$count_arrays(), 0L)
    expect_setequal(names(g$children), c("sub", "z"))
    expect_error(z$get_node("g"), class = "zarr_error_argument")
    expect_error(z[[c("/g", "/x")]], class = "zarr_error_argument")

    if (kind == "local") {
      z2 <- open_zarr(z$store$root)
      expect_setequal(z2$groups, c("/", "/g", "/g/sub", "/g/sub/deeper", "/with space"))
      expect_setequal(z2$arrays, c("/x", "/g/sub/y", "/g/z", "/with space/a b"))
      expect_identical(z2[["/with space/a b"]]$read(), 7L)
      expect_true(dir.exists(file.path(z$store$root, "with space", "a b")))
    }
  }
})

test_that("arrays and groups are deleted", {
  for (kind in c("memory", "local")) {
    z <- new_test_zarr(kind)
    g <- z$add_group("/", "g")
    z$add_group("/g", "sub")
    z$add_array("/g/sub", "y", define_array("int32", 2))$write(1:2)
    z$add_array("/g", "a1", define_array("int32", 3))$write(1:3)
    z$add_array("/", "x", define_array("int32", 3))$write(4:6)
    z$add_group("/", "empty")

    z$delete_array("/g/a1")
    expect_null(z[["/g/a1"]])
    expect_false(any(startsWith(z$store$list_prefix(""), "g/a1/")))
    expect_error(z$delete_array("/g/a1"), class = "zarr_error_not_found")
    expect_error(z$delete_array("/g"), class = "zarr_error_not_found")

    expect_error(z$delete_group("/g"), class = "zarr_error_not_empty")
    expect_error(g$delete("sub"), class = "zarr_error_not_empty")
    expect_identical(z[["/g/sub/y"]]$read(), 1:2)
    z$delete_group("/empty")
    expect_null(z[["/empty"]])
    expect_error(z$delete_group("/nope"), class = "zarr_error_not_found")
    expect_error(z$delete_group("/x"), class = "zarr_error_not_found")

    z$delete_group("/g", recursive = TRUE)
    expect_null(z[["/g"]])
    expect_identical(z$groups, "/")
    expect_identical(z$arrays, "/x")
    expect_false(any(startsWith(z$store$list_prefix(""), "g/")))
    expect_identical(z[["/x"]]$read(), 4:6)

    # a group's delete() and delete_all()
    h <- z$add_group("/", "h")
    h$set_attribute("k", 1)
    h$add_array("a", define_array("int32", 2))
    h$add_group("hh")
    h$delete("a")
    expect_identical(names(h$children), "hh")
    expect_error(h$delete("zz"), class = "zarr_error_not_found")
    z$add_array("/h/hh", "q", define_array("int32", 2))$write(1:2)
    h$delete_all()
    expect_length(h$children, 0L)
    expect_length(h$attributes, 0L)
    expect_true(z$store$is_group("h"))
    expect_identical(z$store$list_prefix("h/"), "h/zarr.json")

    # the root
    z$delete_group("/", recursive = TRUE)
    expect_identical(z$groups, "/")
    expect_identical(z$arrays, character(0))
    expect_true(z$store$is_group(""))
    if (kind == "local") {
      z2 <- open_zarr(z$store$root)
      expect_identical(z2$groups, "/")
      expect_identical(z2$arrays, character(0))
    }
  }
})

test_that("deleting a root array leaves an empty root group", {
  z <- as_zarr(1:10)
  expect_identical(z$arrays, "/")
  z$delete_array("/")
  expect_s3_class(z$root, "zarr_group")
  expect_identical(z$arrays, character(0))
  expect_identical(z$store$list_prefix(""), "zarr.json")
})

test_that("print(), str() and hierarchy() describe the hierarchy", {
  z <- create_zarr()
  g <- z$add_group("/", "g")
  def <- define_array("int32", c(10, 20))
  def$chunk_shape <- c(5, 5)
  arr <- z$add_array("/g", "arr", def)
  arr$write(matrix(1:200, 10))
  arr$set_attribute("units", "m")
  expect_output(print(z), "Memory store")
  expect_output(print(z), "Arrays : 1", fixed = TRUE)
  expect_output(print(z), "arr  int32 [10 x 20]", fixed = TRUE)
  expect_output(str(z), "Zarr v3 object: 2 group(s), 1 array(s)", fixed = TRUE)
  expect_output(z$hierarchy(), "arr")
  expect_output(print(g), "Children: 0 group(s), 1 array(s)", fixed = TRUE)
  expect_output(str(g), "Zarr group '/g'", fixed = TRUE)
  expect_output(g$hierarchy(), "/g")
  expect_output(print(arr), "Shape      : 10 x 20", fixed = TRUE)
  expect_output(print(arr), "Data type  : int32", fixed = TRUE)
  expect_output(print(arr), "Chunks     : 5 x 5 (grid 2 x 4)", fixed = TRUE)
  expect_output(print(arr), "transpose")
  expect_output(print(arr), "units")
  expect_output(str(arr), "Zarr array '/g/arr': int32 [10, 20], chunks [5, 5]", fixed = TRUE)
  expect_output(arr$hierarchy(), "/g/arr")
  expect_output(print(def), "valid")
  expect_output(print(arr$data_type), "int32")
  expect_output(print(arr$chunking), "Chunk shape")
  expect_output(print(z$store), "memory store")
  expect_invisible(print(arr))
  path <- local_store_path()
  zl <- as_zarr(1:3, location = path)
  expect_output(print(zl), basename(path), fixed = TRUE)
  expect_output(str(zl), "local file system store")
})

test_that("str() and print() do not read chunk data", {
  path <- local_store_path()
  z <- create_zarr(path)
  def <- define_array("float64", c(10, 10))
  def$chunk_shape <- c(5, 5)
  arr <- z$add_array("/", "arr", def)
  arr$write(matrix(as.numeric(1:100), 10))
  # make every chunk unreadable: any chunk read now fails
  for (f in list.files(file.path(path, "arr"), pattern = "^c\\.")) writeBin(as.raw(1:3), file.path(path, "arr", f))
  expect_error(arr$read(), class = "zarr_error_corrupt_chunk")
  z2 <- open_zarr(path)
  expect_output(str(z2[["/arr"]]), "float64 [10, 10]", fixed = TRUE)
  expect_output(str(z2), "1 array")
  expect_output(str(z2$root), "1 array")
  expect_output(print(z2[["/arr"]]), "Shape")
  expect_output(print(z2), "arr")
  expect_output(z2$hierarchy(), "arr")
})

test_that("array_builder reads existing metadata as a template without changing it", {
  z <- create_zarr()
  def <- define_array("int16", c(8, 6))
  def$chunk_shape <- c(4, 3)
  def$fill_value <- 0L
  def$add_codec("crc32c")
  arr <- z$add_array("/", "a", def)
  meta <- arr$metadata
  b <- array_builder$new(meta)
  expect_true(b$is_valid())
  expect_identical(b$data_type, "int16")
  expect_equal(b$shape, c(8, 6))
  expect_equal(b$chunk_shape$chunk_shape, c(4, 3))
  expect_equal(b$fill_value, 0)
  expect_identical(b$codec_info$name, c("transpose", "bytes", "zstd", "crc32c"))
  b$add_codec("gzip", NULL, .position = 3)
  expect_identical(arr$metadata, meta)
  b2 <- array_builder$new(b$metadata("JSON"))
  expect_identical(b2$codec_info$name, c("transpose", "bytes", "gzip", "zstd", "crc32c"))
  expect_true(is.character(b$metadata("JSON")))
  expect_false(array_builder$new()$is_valid())
  expect_error(array_builder$new()$metadata(), class = "zarr_error_metadata")
  expect_error(def$format <- 4, class = "zarr_error_argument")
  def$format <- 2
  expect_identical(def$metadata()$zarr_format, 2L)
})

test_that("the builder's data type, fill value and shape settings interact as documented", {
  def <- define_array("int32", c(300, 5))
  def$fill_value <- 7L
  expect_equal(def$fill_value, 7)
  def$data_type <- "float32"
  expect_true(is.nan(def$fill_value)) # reset to the new type's default
  def$chunk_shape <- c(10, 5)
  def$shape <- c(50, 5)
  expect_equal(def$chunk_shape$chunk_shape, c(50, 5)) # reset to the default
  expect_error(def$chunk_shape <- c(1, 2, 3), class = "zarr_error_argument")
  expect_error(def$chunk_shape <- c(0, 1), class = "zarr_error_argument")
  expect_error(def$fill_value <- "abc", class = "zarr_error")
  b <- array_builder$new()
  expect_error(b$fill_value, class = "zarr_error_argument")
  expect_error(b$chunk_shape <- 3, class = "zarr_error_argument")
})

test_that("an array takes its group's format unless its builder sets one", {
  z <- create_zarr()
  expect_identical(z$add_array("/", "a", define_array("int32", 3))$metadata$zarr_format, 3L)
  d <- define_array("int32", 3)
  d$format <- 2
  expect_error(z$add_array("/", "b", d), class = "zarr_error_format")
  expect_null(z[["/b"]])
  withr::local_options(zarr.format = 2L)
  p <- local_store_path()
  z2 <- create_zarr(p)
  a <- z2$add_array("/", "a", define_array("float64", c(2, 3)))
  expect_identical(a$metadata$zarr_format, 2L)
  a$write(matrix(1:6 / 2, 2))
  expect_true(file.exists(file.path(p, "a", ".zarray")))
  expect_identical(open_zarr(p)[["/a"]][, ], matrix(1:6 / 2, 2))
  expect_identical(as_zarr(1:3, name = "v", location = z2$root)$metadata$zarr_format, 2L)
})

test_that("conventions register themselves and write their properties", {
  z <- create_zarr()
  arr <- z$add_array("/", "t", define_array("float32", 3))
  uom <- zarr_conv_uom$new()
  uom$unit <- "Cel"
  uom$version <- "2.2"
  attrs <- uom$write(arr$attributes)
  expect_identical(attrs$uom, list(ucum = list(version = "2.2", unit = "Cel")))
  expect_identical(attrs$zarr_conventions[[1]]$uuid, "3bbe438d-df37-49fe-8e2b-739296d46dfb")
  expect_length(uom$register(attrs)$zarr_conventions, 1L) # registered once
  ref <- zarr_conv_ref$new()
  ref$array <- "/other"
  ref$index <- 2
  attrs <- ref$write(attrs)
  expect_identical(attrs$ref, list(array = "/other", index = 2L))
  expect_identical(vapply(attrs$zarr_conventions, function(x) x$name, ""), c("uom", "ref"))
  expect_identical(zarr_convention$new("x:", "s", "u")$register(list(), brief = TRUE)$zarr_conventions,
                   list(list(name = "x:", schema_url = "s")))
  for (n in names(attrs)) arr$set_attribute(n, attrs[[n]])
  back <- zarr$new(z$store)[["/t"]]$attributes
  expect_identical(back$uom$ucum$unit, "Cel")
  expect_identical(back$ref$array, "/other")
  expect_error(zarr_conv_uom$new()$write(list()), class = "zarr_error_argument")
  expect_error(ref$index <- -1, class = "zarr_error_argument")
})
