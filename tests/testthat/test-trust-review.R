# Defects found by the review of issue 19's areas (data loss, secrets, wrong
# results, hostile input), one regression test each.

test_that("a DelayedArray seed of an HTTP array with secrets shows none (show(), path())", {
  skip_if_not_installed("DelayedArray")
  skip_without_http_server()
  dir <- withr::local_tempdir()
  z <- create_zarr(file.path(dir, "s.zarr"))
  d <- define_array("int32", c(4, 4))
  d$chunk_shape <- c(2, 2)
  z$add_array("/", "a", d)$write(matrix(1:16, 4))
  srv <- http_server(dir)
  url <- paste0(sub("^http://", "http://alice:PW-SECRET@", srv$url_of("s.zarr")), "?X-Amz-Signature=SIG-SECRET")
  x <- zarr_delayed(open_zarr(url)[["/a"]])
  shown <- c(utils::capture.output(methods::show(x@seed)), DelayedArray::path(x@seed), DelayedArray::path(x))
  expect_false(any(grepl("PW-SECRET|SIG-SECRET", shown)))
  expect_true(any(grepl("***", shown, fixed = TRUE)))
  # the seed still reads through the real URL
  expect_identical(as.matrix(x), matrix(1:16, 4))
})

test_that("changing a group's attributes keeps its children in the consolidated metadata", {
  for (v in c(2L, 3L)) {
    d <- withr::local_tempdir()
    st <- zarr_localstore$new(d)
    st$create_group("/", "", v)
    z <- zarr$new(st)
    z$add_group("/", "a")
    z$add_group("/a", "g")
    b <- define_array("int32", 4)
    b$format <- v
    z$add_array("/a", "x", b$metadata())$write(1:4)
    z$add_group("/", "ab")
    zarr_consolidate(z)
    z <- open_zarr(d)
    z[["/a"]]$set_attribute("foo", 1)
    z[["/a/g"]]$set_attribute("bar", 2)
    z2 <- open_zarr(d)
    expect_identical(z2[["/a/x"]][], 1:4, info = v)
    expect_identical(z2[["/a"]]$attributes$foo, 1L, info = v)
    expect_identical(z2[["/a/g"]]$attributes$bar, 2L, info = v)
    map <- function() open_zarr(d)$root$consolidated_state()$map
    expect_setequal(names(map()), c("a", "a/g", "a/x", "ab"))
    # the updated copy equals a rebuild from the store
    before <- map()
    zarr_consolidate(open_zarr(d))
    expect_identical(map()[sort(names(before))], before[sort(names(before))], info = v)
  }
})

test_that("integer64 linear indices select by value on arrays of any rank, as 1-d and per-dimension indices do", {
  skip_if_not_installed("bit64")
  z <- create_zarr()
  d <- define_array("int32", c(4, 5))
  d$chunk_shape <- c(3, 3)
  a <- z$add_array("/", "m", d)
  a[] <- 1:20
  i <- bit64::as.integer64(c(3, 20, 7))
  expect_identical(a[i], c(3L, 20L, 7L))
  expect_identical(a[bit64::as.integer64(3), 2], 7L)
  a[bit64::as.integer64(20)] <- 0L
  expect_identical(a[4, 5], 0L)
  d1 <- define_array("int32", 10)
  d1$chunk_shape <- 3
  b <- z$add_array("/", "v", d1)
  b[] <- 1:10
  expect_identical(b[bit64::as.integer64(c(3, 10))], c(3L, 10L))
})

test_that("deleting a root array interrupted while erasing its chunks leaves an empty root group, no array with holes", {
  # a memory store whose chunk erasures fail after the first one
  halting_store <- R6::R6Class("halting_store", inherit = zarr_memorystore, public = list(
    erased = 0, halt = FALSE,
    erase = function(key) {
      if (self$halt && self$erased >= 1)
        stop(structure(class = c("zarr_error_io", "zarr_error", "error", "condition"),
                       list(message = "injected failure", call = NULL)))
      self$erased <- self$erased + 1
      super$erase(key)
    },
    io_spec = function() {
      if (is.null(private$.io))
        private$.io <- zarr:::store_io_r(get = function(keys) lapply(keys, function(k) self$get(k)),
                                         set = function(key, value) self$set(key, value),
                                         erase = function(key) self$erase(key))
      private$.io
    }))
  for (v in c(2L, 3L)) {
    st <- halting_store$new()
    d <- define_array("int32", c(4, 4))
    d$chunk_shape <- c(2, 2)
    d$format <- v
    st$set_metadata("", d$metadata())
    z <- zarr$new(st)
    z$root$write(matrix(1:16, 4))
    st$halt <- TRUE
    expect_error(z$delete_array("/"), class = "zarr_error_io")
    st$halt <- FALSE
    # the array is gone whole: the root is an empty group
    r <- zarr$new(st)$root
    expect_s3_class(r, "zarr_group")
    expect_length(r$children, 0L)
    expect_identical(r$metadata$zarr_format, v)
    # uninterrupted: nothing but the group's documents is left
    st2 <- zarr_memorystore$new()
    st2$set_metadata("", d$metadata())
    z2 <- zarr$new(st2)
    z2$root$write(matrix(1:16, 4))
    z2$delete_array("/")
    expect_true(all(st2$list_prefix("") %in% c("zarr.json", ".zgroup", ".zattrs")))
    expect_s3_class(zarr$new(st2)$root, "zarr_group")
  }
})

test_that("credentials written into an s3:// location are refused, never sent or shown", {
  s3 <- s3_server()
  withr::local_envvar(AWS_ENDPOINT_URL = s3$endpoint)
  for (f in list(function(u) open_zarr(u), function(u) create_zarr(u), function(u) s3_list_dir("AK:SEC-RET@private"),
                 function(u) zarr_s3store$new("AK:SEC-RET@private", endpoint = s3$endpoint))) {
    s3$reset()
    e <- tryCatch(f("s3://AK:SEC-RET@private/x"), error = identity)
    expect_s3_class(e, "zarr_error_argument")
    expect_false(grepl("SEC-RET", conditionMessage(e)))
    expect_identical(s3$stats()$requests, 0L)
  }
})

test_that("a node cannot take a metadata document's name (deleting it erased its parent's document)", {
  for (v in c(2L, 3L)) for (nm in c("zarr.json", ".zgroup", ".zattrs", ".zarray", ".zmetadata")) {
    st <- zarr_memorystore$new()
    st$create_group("/", "", v)
    z <- zarr$new(st)
    g <- z$add_group("/", "g")
    g$set_attribute("keep", 1)
    d <- define_array("int32", 3)
    d$format <- v
    z$add_array("/g", "x", d$metadata())$write(1:3)
    expect_error(z$add_group("/g", nm), class = "zarr_error_node_name")
    expect_error(z$add_array("/g", nm, d$metadata()), class = "zarr_error_node_name")
    z2 <- zarr$new(st)
    expect_identical(z2[["/g/x"]][], 1:3)
    expect_equal(z2[["/g"]]$attributes$keep, 1)
  }
})

test_that("create_zarr() and as_zarr() of a URL make no local folder named after it (password included)", {
  withr::local_dir(withr::local_tempdir())
  u <- "https://alice:PW-SECRET@127.0.0.1:1/x.zarr?sig=SIG-SECRET"
  for (f in list(function() create_zarr(u), function() as_zarr(1:3, location = u),
                 function() zarr_localstore$new(u), function() create_zarr("gs://bucket/x"))) {
    e <- tryCatch(f(), error = identity)
    expect_s3_class(e, "zarr_error_argument")
    expect_false(grepl("PW-SECRET|SIG-SECRET", conditionMessage(e)))
  }
  expect_length(list.files(".", all.files = TRUE, no.. = TRUE, recursive = TRUE, include.dirs = TRUE), 0L)
  # file:// stays a local path
  expect_s3_class(create_zarr(paste0("file://", file.path(getwd(), "ok.zarr"))), "zarr")
})

test_that("a child entry no node can have (consolidated or listed) is skipped, not fatal to the hierarchy", {
  d <- withr::local_tempdir()
  writeLines('{"zarr_format":2}', file.path(d, ".zgroup"))
  arr <- list(zarr_format = 2, shape = list(2), chunks = list(2), dtype = "<i4", compressor = NULL,
              fill_value = 0, order = "C", filters = NULL)
  meta <- list(".zgroup" = list(zarr_format = 2), "ok/.zarray" = arr, "__x/.zarray" = arr,
               "c\u0001/.zarray" = arr, "../evil/.zarray" = arr)
  writeLines(jsonlite::toJSON(list(zarr_consolidated_format = 1, metadata = meta), auto_unbox = TRUE, null = "null"),
             file.path(d, ".zmetadata"))
  for (nm in c("ok", "__x")) {
    dir.create(file.path(d, nm))
    writeLines(jsonlite::toJSON(arr, auto_unbox = TRUE, null = "null"), file.path(d, nm, ".zarray"))
  }
  z <- open_zarr(d)
  expect_identical(z$arrays, "/ok")
  expect_no_error(utils::capture.output(print(z)))
  # the same store listed (no consolidated metadata)
  file.remove(file.path(d, ".zmetadata"))
  z <- open_zarr(d)
  expect_identical(z$arrays, "/ok")
  expect_no_error(utils::capture.output(print(z)))
})
