# CRAN zarr 1.0.0 additions: persistent options, chunking helpers, node name
# checks, array details/promote/raw_read/flush, save_to() and progress bars.

# A private configuration directory for the whole block: the user's own is
# never read or written.
local_config_dir <- function(env = parent.frame()) {
  dir <- tempfile("zarr-config-")
  dir.create(dir)
  old_env <- Sys.getenv("R_USER_CONFIG_DIR", NA)
  old_opts <- options(stats::setNames(vector("list", length(zarr:::zarr_option_table())), paste0("zarr.", names(zarr:::zarr_option_table()))))
  do.call(on.exit, list(substitute({
    if (is.na(OLD)) Sys.unsetenv("R_USER_CONFIG_DIR") else Sys.setenv(R_USER_CONFIG_DIR = OLD)
    options(OPTS)
    unlink(DIR, recursive = TRUE)
  }, list(OLD = old_env, OPTS = old_opts, DIR = dir)), TRUE), envir = env)
  Sys.setenv(R_USER_CONFIG_DIR = dir)
  dir
}

test_that("zarr_options() reads and sets the package's R options", {
  cfg <- local_config_dir()
  all <- zarr_options()
  expect_true(all(c("num_threads", "fill_as_na", "format", "progress", "chunk_length") %in% names(all)))
  expect_identical(all$fill_as_na, TRUE)
  expect_identical(all$chunk_length, 100L)
  expect_identical(zarr_options("chunk_length", 50), 100L)
  expect_identical(getOption("zarr.chunk_length"), 50)
  expect_identical(zarr_options("zarr.chunk_length"), 50)
  # a value that does not suit the option is ignored
  zarr_options("fill_as_na", "yes")
  expect_identical(zarr_options("fill_as_na"), TRUE)
  zarr_options("format", 4)
  expect_identical(zarr_options("format"), 3L)
  expect_error(zarr_options("no_such_option"), class = "zarr_error_argument")
  # options() and zarr_options() are the same thing
  options(zarr.num_threads = 2L)
  expect_identical(zarr_options("num_threads"), 2L)
})

test_that("print(zarr_options()) is a table of value, default and meaning; the list works as before", {
  cfg <- local_config_dir()
  options(zarr.chunk_length = 50L, zarr.chunk_cache_bytes = 32 * 2^20, zarr.num_threads = 1L)
  all <- zarr_options()
  # the value is still the list of every option
  expect_true(is.list(all))
  expect_identical(all$chunk_length, 50L)
  expect_identical(all[["format"]], 3L)
  expect_identical(names(as.list(all)), names(all))
  expect_false(inherits(as.list(all), "zarr_options"))
  expect_identical(lapply(all[c("fill_as_na", "format")], identity), list(fill_as_na = TRUE, format = 3L))

  lines <- format(all, width = 80L)
  expect_identical(strsplit(trimws(lines[1L]), " +")[[1L]], c("option", "value", "default", "meaning"))
  expect_length(lines, length(all) + 1L)
  expect_true(all(nchar(lines) <= 80L))
  row <- function(key) strsplit(lines[startsWith(lines, paste0(key, " "))], "  +")[[1L]]
  expect_identical(row("chunk_length"), c("chunk_length", "50", "100", "auto_chunk() longest side"))
  expect_identical(row("chunk_cache_bytes"), c("chunk_cache_bytes", "32 MiB", "64 MiB", "decoded-chunk cache size"))
  expect_identical(row("num_threads")[2:3], c("1", "auto"))
  expect_identical(row("range_gap")[2:3], c("1 MiB", "1 MiB"))
  expect_identical(row("group_style")[2:3], c("blue, bold", "blue, bold"))
  # every option of the table has its one-line meaning
  expect_setequal(setdiff(names(all), names(zarr:::zarr_option_meaning)), character())
  # a narrow console shortens the meanings (to 20 characters at least), not the values
  narrow <- format(all, width = 60L)
  meanings <- substring(narrow, regexpr("meaning", narrow[1L]))
  expect_true(all(nchar(meanings) <= 20L))
  expect_true(any(endsWith(meanings, "...")))
  expect_identical(strsplit(narrow[startsWith(narrow, "chunk_cache_bytes ")], "  +")[[1L]][2:3], c("32 MiB", "64 MiB"))

  out <- capture.output(res <- print(all))
  expect_identical(res, all)
  expect_match(out[1L], "zarr options")
  expect_identical(out[-1L], format(all))
})

test_that("save_options() keeps options for the next session and reset_options() forgets them", {
  cfg <- local_config_dir()
  zarr_options("num_threads", 3L)
  zarr_options("chunk_length", 64L)
  f <- save_options()
  expect_true(file.exists(f))
  expect_true(startsWith(normalizePath(f), normalizePath(cfg)))
  expect_identical(readRDS(f)[c("num_threads", "chunk_length")], list(num_threads = 3L, chunk_length = 64L))

  # a new R session loads them when the package is loaded
  rscript <- file.path(R.home("bin"), "Rscript")
  run <- function(code) {
    out <- suppressWarnings(system2(rscript, c("--vanilla", "-e", shQuote(code)), stdout = TRUE, stderr = TRUE,
                                    env = c(paste0("R_USER_CONFIG_DIR=", cfg),
                                            paste0("R_LIBS=", paste(.libPaths(), collapse = .Platform$path.sep)))))
    out[length(out)]
  }
  expect_identical(run("library(zarr); cat(getOption('zarr.num_threads'), zarr_options('chunk_length'))"), "3 64")
  # what the session sets before loading wins
  expect_identical(run("options(zarr.num_threads = 1L); library(zarr); cat(getOption('zarr.num_threads'))"), "1")
  # and in this session: loading again applies only unset options
  options(zarr.num_threads = NULL, zarr.chunk_length = 7L)
  expect_identical(sort(zarr:::load_saved_options()), "num_threads")
  expect_identical(getOption("zarr.num_threads"), 3L)
  expect_identical(getOption("zarr.chunk_length"), 7L)

  reset_options()
  expect_false(file.exists(f))
  expect_null(getOption("zarr.num_threads"))
  expect_null(getOption("zarr.chunk_length"))
  expect_identical(zarr_options("chunk_length"), 100L)
  expect_identical(run("library(zarr); cat(is.null(getOption('zarr.num_threads')))"), "TRUE")
})

test_that("a damaged options file is ignored", {
  cfg <- local_config_dir()
  f <- zarr:::options_file()
  dir.create(dirname(f), recursive = TRUE)
  writeBin(charToRaw("not an rds file"), f)
  expect_identical(zarr:::load_saved_options(), character())
  saveRDS(list(num_threads = "many", chunk_length = 20L, unknown = 1), f)
  expect_identical(zarr:::load_saved_options(), "chunk_length")
  expect_null(getOption("zarr.num_threads"))
})

test_that("auto_chunk() caps each chunk side and evens the chunks out", {
  expect_identical(auto_chunk(c(5000L, 43L, 12800L, 4L)), c(100L, 43L, 100L, 4L))
  expect_identical(auto_chunk(c(250, 99, 101)), c(84L, 99L, 51L))
  expect_identical(auto_chunk(c(5000L, 43L, 12800L, 4L), 1000L), c(1000L, 43L, 985L, 4L))
  expect_identical(auto_chunk(integer()), integer())
  op <- options(zarr.chunk_length = 10L)
  on.exit(options(op))
  expect_identical(auto_chunk(c(25, 5)), c(9L, 5L))
  expect_error(auto_chunk(c(10, 10), 0), class = "zarr_error_argument")
})

test_that("optimal_chunking() keeps chunks within the budget and follows the weights", {
  shape <- c(x = 50000L, y = 350L, time = 8192L)
  ch <- optimal_chunking(shape)
  expect_named(ch, names(shape))
  expect_true(prod(as.numeric(ch)) <= 4 * 1024^2)
  expect_true(prod(as.numeric(ch)) > 4 * 1024^2 / 2)
  expect_true(max(ch) / min(ch) < 2) # no preference: about even
  w <- optimal_chunking(shape, weights = c(1, 1, 2))
  expect_true(prod(as.numeric(w)) <= 4 * 1024^2)
  expect_true(w[["time"]] > 10 * w[["x"]])
  # whole small dimensions, the rest of the budget to the others
  expect_identical(unname(optimal_chunking(c(3L, 1000000L), chunk_values = 3000)), c(3L, 1000L))
  expect_identical(unname(optimal_chunking(c(10L, 20L))), c(10L, 20L))
  expect_identical(unname(optimal_chunking(c(1L, 1L))), c(1L, 1L))
  # no small remainder chunk: 1000 in chunks of about 316 gives chunks that
  # tile it evenly (250 or 334), within the budget
  expect_identical(unname(optimal_chunking(c(1000L, 1000L), chunk_values = 1e5)), c(250L, 334L))
  expect_error(optimal_chunking(shape, weights = c(1, 2)), class = "zarr_error_argument")
  expect_error(optimal_chunking(shape, weights = c(1, 0, 1)), class = "zarr_error_argument")
})

test_that("is_valid_node_name() applies the rules used when nodes are added", {
  expect_identical(is_valid_node_name(c("temperature", "a.b-c_d", "\u00e9t\u00e9", "", ".", "..", "...",
                                        "__x", "a/b", NA, "x__")),
                   c(TRUE, TRUE, TRUE, FALSE, FALSE, FALSE, FALSE, FALSE, FALSE, FALSE, TRUE))
  expect_identical(is_valid_node_name(1), FALSE)
  z <- create_zarr()
  for (nm in c("ok", "__bad", "a/b"))
    expect_identical(is.null(tryCatch(z$add_group("/", nm), zarr_error = function(e) NULL)),
                     !is_valid_node_name(nm))
})

test_that("array_builder sets the data type from an R storage mode", {
  ab <- define_array("int32", c(4, 5))
  ab$data_type_from_storage.mode <- "double"
  expect_identical(ab$data_type, "float64")
  expect_s3_class(ab$data_type_from_storage.mode, "zarr_data_type")
  ab$data_type_from_storage.mode <- "character"
  expect_identical(ab$data_type, "string")
  expect_identical(ab$codec_info$name[ab$codec_info$mode == "array -> bytes"], "vlen-utf8")
  ab$data_type_from_storage.mode <- storage.mode(TRUE)
  expect_identical(ab$data_type, "bool")
  ab$data_type_from_storage.mode <- "integer"
  z <- create_zarr()
  a <- z$add_array("/", "x", ab)
  a$write(matrix(1:20, 4))
  expect_identical(a[], matrix(1:20, 4))
  expect_error(ab$data_type_from_storage.mode <- "list", class = "zarr_error_argument")
})

test_that("details() summarises an array", {
  z <- create_zarr()
  ab <- define_array("float32", c(10, 20))
  ab$dimension_names <- c("lat", "lon")
  a <- z$add_array("/", "t", ab)
  expect_identical(a$details(), c(name = "t", data_type = "float32", shape = "lat = 10, lon = 20"))
  b <- z$add_array("/", "b", define_array("int8", 7))
  expect_identical(b$details(), c(name = "b", data_type = "int8", shape = "7"))
  s <- z$add_array("/", "s", define_array("float64", integer()))
  expect_identical(s$details()[["shape"]], "(scalar)")
  r <- as_zarr(1:3)
  expect_identical(r$root$details(), c(name = "(root array)", data_type = "int32", shape = "3"))
})

test_that("raw_read returns fill values as stored, and flush() is harmless", {
  z <- create_zarr()
  ab <- define_array("int32", 6)
  ab$fill_value <- -1L
  a <- z$add_array("/", "x", ab)
  a$write(c(1L, -1L, 3L), list(1:3))
  expect_identical(a$read(), c(1L, NA, 3L, NA, NA, NA))
  expect_false(a$raw_read)
  a$raw_read <- TRUE
  expect_identical(a$read(), c(1L, -1L, 3L, -1L, -1L, -1L))
  expect_identical(a[2:4], c(-1L, 3L, -1L))
  a$raw_read <- FALSE
  expect_identical(a$flush(), a)
  expect_identical(a[2], NA_integer_)
})

for (kind in c("memory", "local")) {
  test_that(sprintf("promote() adds a dimension without rewriting chunks (%s store)", kind), {
    z <- new_test_zarr(kind)
    x <- array(as.numeric(seq_len(6 * 8 * 3)), c(6, 8, 3))
    ab <- define_array("float64", dim(x))
    ab$chunk_shape <- c(4, 3, 2)
    ab$dimension_names <- c("y", "x", "band")
    a <- z$add_array("/", "a", ab)
    a$write(x)
    a$promote(1)
    expect_identical(a$shape, c(1L, 6L, 8L, 3L))
    expect_identical(unname(a$read()), array(x, c(1, 6, 8, 3)))
    expect_identical(a$dimension_names, c(NA, "y", "x", "band"))
    a$promote(4, 3)
    expect_identical(a$shape, c(1L, 6L, 8L, 3L, 3L))
    r <- unname(a$read())
    expect_identical(r[1, , , 1, ], x)
    expect_true(all(is.na(r[1, , , 2:3, ])))
    # the promoted array reads the same when opened anew
    z2 <- zarr$new(z$store)
    expect_identical(unname(z2$get_node("/a")$read()), r)
    keys <- z$store$list_prefix("a/")
    expect_false(any(grepl("__zarr_promote", keys)))
    # 0-d to 1-d
    s <- z$add_array("/", "s", define_array("int32", integer()))
    s$write(42L)
    s$promote(1)
    expect_identical(s$shape, 1L)
    expect_identical(s$read(), 42L)
    expect_error(a$promote(7), class = "zarr_error_argument")
  })
}

test_that("promote() works on v2 arrays and refuses sharded ones", {
  withr::local_options(zarr.format = 2L)
  z <- create_zarr(local_store_path())
  a <- as_zarr(matrix(1:12, 3), name = "m", location = z$root)
  a$promote(3)
  expect_identical(a$read(), array(1:12, c(3, 4, 1)))
  expect_identical(zarr$new(z$store)$get_node("/m")$read(), array(1:12, c(3, 4, 1)))
})

# A hierarchy with groups, attributes, dimension names and a sparse array.
make_tree <- function(loc, format = 3L) {
  withr::local_options(zarr.format = format)
  z <- if (is.null(loc)) create_zarr() else create_zarr(loc)
  z$root$set_attribute("title", "test tree")
  g <- z$add_group("/", "grp")
  g$set_attribute("n", 3L)
  z$add_group("/grp", "sub")
  x <- array(rnorm(40 * 30 * 2), c(40, 30, 2))
  ab <- define_array("float64", dim(x))
  ab$chunk_shape <- c(16, 16, 1)
  ab$dimension_names <- c("lat", "lon", "t")
  z$add_array("/grp", "temp", ab)$write(x)
  sp <- define_array("int16", c(100, 100))
  sp$chunk_shape <- c(10, 10)
  sp$fill_value <- -1L
  s <- z$add_array("/grp/sub", "sparse", sp)
  s$write(matrix(5L, 10, 10), list(21:30, 71:80))
  s$set_attribute("units", "m")
  txt <- z$add_array("/", "names", define_array("string", 5))
  txt$write(c("a", "bb", "", "dddd", "\u00e9"))
  list(z = z, x = x)
}

expect_same_tree <- function(a, b) {
  expect_setequal(a$groups, b$groups)
  expect_setequal(a$arrays, b$arrays)
  for (p in a$arrays) {
    expect_identical(b$get_node(p)$read(fill_as_na = FALSE), a$get_node(p)$read(fill_as_na = FALSE), info = p)
    expect_identical(b$get_node(p)$attributes[setdiff(names(b$get_node(p)$attributes), "_ARRAY_DIMENSIONS")],
                     a$get_node(p)$attributes[setdiff(names(a$get_node(p)$attributes), "_ARRAY_DIMENSIONS")], info = p)
    expect_identical(b$get_node(p)$dimension_names, a$get_node(p)$dimension_names, info = p)
  }
  for (p in a$groups) expect_identical(b$get_node(p)$attributes, a$get_node(p)$attributes, info = p)
}

test_that("save_to() converts v3 to v2 and back, local to memory, with equal values", {
  t3 <- make_tree(local_store_path(), 3L)
  d2 <- local_store_path()
  expect_identical(t3$z$save_to(d2, format = 2), t3$z)
  expect_true(file.exists(file.path(d2, "grp", "temp", ".zarray")))
  expect_true(file.exists(file.path(d2, "grp", "temp", "0.0.1")))
  expect_false(file.exists(file.path(d2, "zarr.json")))
  z2 <- open_zarr(d2)
  expect_identical(z2$version, 2L)
  expect_same_tree(t3$z, z2)
  expect_identical(unname(z2$get_node("/grp/temp")[]), t3$x)
  expect_identical(jsonlite::fromJSON(file.path(d2, "grp", "temp", ".zattrs"))[["_ARRAY_DIMENSIONS"]],
                   c("lat", "lon", "t"))
  # only the chunks that exist are copied
  expect_identical(sort(list.files(file.path(d2, "grp", "sub", "sparse"))), "2.7")

  # v2 back to v3, into memory
  m <- zarr_memorystore$new()
  z2$save_to(m)
  z3 <- zarr$new(m)
  expect_identical(z3$version, 3L)
  expect_same_tree(t3$z, z3)
  expect_true(m$exists("grp/temp/c.0.0.1"))
  expect_false("_ARRAY_DIMENSIONS" %in% names(z3$get_node("/grp/temp")$attributes))

  # memory to local, v3 to v3: the same chunk bytes
  d3 <- local_store_path()
  z3$save_to(d3, verbose = FALSE)
  z4 <- open_zarr(d3)
  expect_same_tree(t3$z, z4)
  expect_identical(readBin(file.path(d3, "grp/temp/c.1.1.0"), "raw", 1e6), m$get("grp/temp/c.1.1.0"))
})

test_that("save_to() saves a single-array store and refuses places that are taken", {
  z <- as_zarr(matrix(as.numeric(1:20), 4))
  d <- local_store_path()
  expect_message(z$save_to(d, verbose = TRUE, format = 2L), "array /")
  expect_identical(open_zarr(d)$root[], matrix(as.numeric(1:20), 4))
  expect_error(z$save_to(d), class = "zarr_error_exists")
  m <- zarr_memorystore$new()
  z$save_to(m)
  expect_error(z$save_to(m), class = "zarr_error_exists")
  expect_error(z$save_to(d, format = 4), class = "zarr_error_argument")
})

test_that("save_to() converts stores written by zarr-python", {
  skip_without_fixtures()
  src <- file.path(fixtures_dir(), "zarr-python")
  stores <- list.dirs(src, recursive = FALSE)
  stores <- stores[file.exists(file.path(stores, ".zgroup")) | file.exists(file.path(stores, "zarr.json"))]
  require_or_skip(length(stores) > 0, "zarr-python fixture stores")
  n <- 0
  for (s in stores) {
    z <- open_zarr(s, read_only = TRUE)
    ok <- tryCatch({ for (p in z$arrays) z$get_node(p)$read(); TRUE }, zarr_error = function(e) FALSE)
    if (!ok) next
    m <- zarr_memorystore$new()
    saved <- tryCatch({ z$save_to(m, format = 3L); TRUE }, zarr_error_unsupported = function(e) FALSE)
    if (!saved) next
    z3 <- zarr$new(m)
    expect_setequal(z3$arrays, z$arrays)
    for (p in z$arrays)
      expect_identical(z3$get_node(p)$read(fill_as_na = FALSE), z$get_node(p)$read(fill_as_na = FALSE),
                       info = paste(basename(s), p))
    n <- n + 1
  }
  expect_true(n > 0)
})

test_that("a v2 copy made by save_to() reads the same in zarr-python", {
  skip_without_python_zarr()
  t3 <- make_tree(NULL, 3L)
  d2 <- local_store_path()
  t3$z$save_to(d2, format = 2L)
  script <- tempfile(fileext = ".py")
  writeLines(c("import sys, zarr, numpy as np",
               "g = zarr.open_group(sys.argv[1], mode='r')",
               "a = g['grp/temp'][:]",
               "s = g['grp/sub/sparse'][:]",
               "print(repr(float(a.sum())), int(s.sum()), list(a.shape), g.attrs['title'])"), script)
  out <- system2(python_bin(), c(script, d2), stdout = TRUE, stderr = TRUE)
  x <- t3$x
  sparse <- t3$z$get_node("/grp/sub/sparse")$read(fill_as_na = FALSE)
  got <- strsplit(out[length(out)], " ", fixed = TRUE)[[1]]
  expect_equal(as.numeric(got[1]), sum(x), tolerance = 1e-12)
  expect_identical(as.numeric(got[2]), as.numeric(sum(sparse)))
  expect_identical(paste(got[-(1:2)], collapse = " "), "[40, 30, 2] test tree")
})

test_that("progress reports reach R during a long read and can be turned off", {
  withr::local_options(zarr.progress_min_bytes = 0, zarr.progress_after = 0)
  z <- create_zarr(local_store_path())
  x <- array(as.numeric(seq_len(200 * 200 * 10)), c(200, 200, 10))
  ab <- define_array("float64", dim(x))
  ab$chunk_shape <- c(20, 20, 10)
  a <- z$add_array("/", "big", ab)
  a$write(x)
  st <- zarr:::progress_state
  before <- st$reports
  withr::local_options(zarr.progress = FALSE)
  expect_identical(a[], x)
  a$write(x + 1)
  expect_identical(st$reports, before)

  withr::local_options(zarr.progress = TRUE)
  skip_if_not_installed("cli")
  expect_identical(a[], x + 1)
  # every poll may report (delay 0); 100 chunks over 2 threads take many polls
  expect_true(st$reports > before || zarr_options("num_threads") == 1L)
  expect_false(st$active)
  a$write(x)
  expect_identical(a[, , 3], x[, , 3])
  # a failing report turns reporting off, never the read
  withr::local_options(zarr.progress_after = 0)
  assign("reports", "not a number", envir = st)
  expect_identical(a[], x)
  assign("reports", before, envir = st)
})

test_that("s3_list_dir() lists what is below a prefix in a bucket", {
  s3 <- s3_server()
  z <- create_zarr()
  st <- s3$store("private", "data/one.zarr")
  z$save_to(st)
  as_zarr(1:5, name = "v", location = zarr$new(st)$root)
  s3$store("private", "data")$set("readme.txt", charToRaw("hi"))
  out <- s3_list_dir("private", "data", endpoint = s3$endpoint, access_key = s3$key, secret_key = s3$secret)
  expect_setequal(out, c("data/one.zarr/", "data/readme.txt"))
  top <- s3_list_dir("private", endpoint = s3$endpoint, access_key = s3$key, secret_key = s3$secret)
  expect_identical(top, "data/")
  expect_error(s3_list_dir("private", "data", endpoint = s3$endpoint), class = "zarr_error_s3")
})

test_that("save_to() makes a local copy of a store on a web server", {
  t3 <- make_tree(local_store_path(), 2L)
  zarr_consolidate(t3$z)
  srv <- http_server(t3$z$store$root)
  remote <- open_zarr(srv$url)
  expect_setequal(remote$arrays, t3$z$arrays)
  d <- local_store_path()
  remote$save_to(d, format = 3L)
  z <- open_zarr(d)
  expect_same_tree(t3$z, z)
  # missing chunks stay missing
  expect_identical(list.files(file.path(d, "grp", "sub", "sparse"), recursive = TRUE), c("c.2.7", "zarr.json"))
})

test_that("save_to() copies an array it cannot read as it is when the format stays", {
  skip_without_fixtures()
  src <- file.path(fixtures_dir(), "zarr-python", "v3-float32")
  require_or_skip(dir.exists(src), "the zarr-python v3-float32 fixture")
  z <- open_zarr(src, read_only = TRUE)
  bad <- Filter(function(p) inherits(tryCatch(z$get_node(p)$read(), zarr_error = function(e) e), "zarr_error"), z$arrays)
  require_or_skip(length(bad) > 0, "an array with a codec this package does not read")
  d <- local_store_path()
  z$save_to(d)
  for (p in bad) {
    pre <- sub("^/", "", p)
    expect_identical(jsonlite::fromJSON(file.path(d, pre, "zarr.json"))[["codecs"]],
                     jsonlite::fromJSON(file.path(src, pre, "zarr.json"))[["codecs"]], info = p)
    files <- setdiff(list.files(file.path(src, pre), recursive = TRUE), "zarr.json")
    expect_true(length(files) > 0)
    for (f in files)
      expect_identical(readBin(file.path(d, pre, f), "raw", 1e7), readBin(file.path(src, pre, f), "raw", 1e7), info = f)
  }
  # converting it is an error that names it, and nothing is written
  d2 <- local_store_path()
  err <- expect_error(z$save_to(d2, format = 2L), class = "zarr_error")
  expect_false(is.null(err$array))
  expect_false(dir.exists(d2) && length(list.files(d2, recursive = TRUE, all.files = TRUE)) > 0)
})

test_that("the engine's report hook: errors end reporting, interrupts stop the call", {
  z <- create_zarr(local_store_path())
  x <- matrix(as.numeric(seq_len(100 * 100)), 100)
  ab <- define_array("float64", dim(x))
  ab$chunk_shape <- c(10, 10)
  a <- z$add_array("/", "m", ab)
  a$write(x)
  withr::local_options(zarr.progress = FALSE) # only the hook set below
  calls <- 0
  .Call(zarr:::ffi_progress_begin, function(done, total) {
    calls <<- calls + 1
    stop("a broken progress bar")
  }, 0)
  expect_identical(a[], x)
  ended <- .Call(zarr:::ffi_progress_end)
  expect_identical(calls, 1) # the error turned reporting off
  expect_identical(ended[2], 100) # 100 chunks planned; counting stopped with reporting
  .Call(zarr:::ffi_progress_begin, function(done, total) {
    signalCondition(structure(class = c("interrupt", "condition"), list(message = "", call = NULL)))
  }, 0)
  expect_error(a[], class = "zarr_error_interrupted")
  .Call(zarr:::ffi_progress_end)
  expect_identical(a[], x)
})

test_that("save_to() reports its progress, and not when progress is off", {
  skip_if_not_installed("cli")
  t3 <- make_tree(NULL, 3L)
  st <- zarr:::progress_state
  withr::local_options(zarr.progress = FALSE)
  before <- st$reports
  t3$z$save_to(zarr_memorystore$new())
  expect_identical(st$reports, before)
  withr::local_options(zarr.progress = TRUE, zarr.progress_after = 0)
  m <- zarr_memorystore$new()
  t3$z$save_to(m)
  expect_true(st$reports > before)
  expect_same_tree(t3$z, zarr$new(m))
})
