# Metadata are plain lists from JSON, and R's `$` on a list matches names
# partially: `$chunk_shape` found `chunk_shapes` of a rectilinear grid, so
# save_to() from HTTP copied no chunk (all NA) and saved metadata gained a
# spurious chunk_shape. The package reads metadata with exact names; these
# tests run a broad set of operations with every partial-match warning of R
# on and fail on any.

# Evaluate `expr` with R's partial-match warnings on; fail on any of them
# (other warnings pass through).
expect_no_partial_match <- function(expr) {
  seen <- character()
  withr::local_options(warnPartialMatchDollar = TRUE, warnPartialMatchArgs = TRUE,
                       warnPartialMatchAttr = TRUE)
  withCallingHandlers(expr, warning = function(w) {
    msg <- conditionMessage(w)
    if (grepl("partial (argument )?match", msg)) {
      call <- conditionCall(w)
      seen <<- c(seen, paste0(msg, if (!is.null(call)) paste0(" in ", deparse(call, nlines = 1L))))
      invokeRestart("muffleWarning")
    }
  })
  expect_identical(unique(seen), character())
  invisible()
}

# A hierarchy with a v3 regular, a rectilinear, a sharded and a string array.
exact_tree <- function(root, v3 = TRUE) {
  z <- create_zarr(root)
  g <- z$add_group("/", "g")
  g$set_attribute("title", "t")
  g$set_attribute("chunk", 1)
  d <- define_array("float64", c(10, 7))
  d$chunk_shape <- c(4, 3)
  a <- z$add_array("/g", "reg", d)
  a[] <- matrix(as.numeric(1:70), 10, 7)
  a$set_attribute("units", "m")
  a$set_attribute("chunk_shape_note", "x")
  if (v3) { # rectilinear grids and sharding exist in v3 only
    r <- define_array("int32", c(10, 7))
    r$chunk_shape <- list(c(2, 5, 3), c(4, 3))
    rr <- z$add_array("/g", "rect", r)
    rr[] <- matrix(1:70, 10, 7)
    s <- define_array("float64", c(8, 8))
    s$chunk_shape <- c(4, 8)
    s$add_codec("sharding_indexed", list(chunk_shape = c(2, 4)))
    ss <- z$add_array("/", "shard", s)
    ss[] <- matrix(as.numeric(1:64), 8, 8)
  }
  st <- z$add_array("/", "str", define_array("string", c(3)))
  st[] <- c("a", "bb", NA)
  z
}

exact_values <- list("/g/reg" = matrix(as.numeric(1:70), 10, 7), "/g/rect" = matrix(1:70, 10, 7),
                     "/shard" = matrix(as.numeric(1:64), 8, 8), "/str" = c("a", "bb", NA))

expect_tree_values <- function(z, values = exact_values) {
  for (p in names(values)) expect_identical(z[[p]][], values[[p]], info = p)
}

test_that("reading, writing, printing and saving v3 and v2 trees match names exactly", {
  expect_no_partial_match({
    for (fmt in c(3L, 2L)) {
      withr::local_options(zarr.format = fmt)
      root <- local_store_path()
      z <- exact_tree(root, v3 = fmt == 3L)
      values <- if (fmt == 3L) exact_values else exact_values[c("/g/reg", "/str")]
      expect_tree_values(open_zarr(root), values)
      zz <- open_zarr(root)
      capture.output(print(zz), print(zz[["/g/reg"]]),
                     str(zz[["/g/reg"]]), print(zz[["/g"]]), print(zz[["/g/reg"]]$chunking))
      expect_identical(zz[["/g"]]$attributes$title, "t")
      expect_identical(zz[["/g/reg"]][3:5, 2], as.numeric(13:15))
      # save_to in both formats (a rectilinear grid exists only in v3)
      dst <- local_store_path()
      if (fmt == 3L) {
        zz$save_to(dst)
        expect_tree_values(open_zarr(dst))
      } else {
        zz$save_to(dst, format = 2)
        expect_tree_values(open_zarr(dst), values)
      }
      if (fmt == 3L) capture.output(print(zz[["/g/rect"]]), str(zz[["/g/rect"]]), print(zz[["/shard"]]))
      zz[["/g/reg"]]$resize(c(12, 7))
      zz[["/g/reg"]]$resize(c(10, 7))
      zz[["/g/reg"]]$promote(3, 1)
      expect_equal(zz[["/g/reg"]]$shape, c(10, 7, 1))
      expect_identical(open_zarr(root)[["/g/reg"]][, , 1], exact_values[["/g/reg"]])
      zarr_consolidate(zz)
      expect_tree_values(open_zarr(root), values[names(values) != "/g/reg"])
    }
  })
})

test_that("save_to() from HTTP copies every chunk of a rectilinear array, with exact metadata", {
  root <- local_store_path()
  z <- exact_tree(root)
  zarr_consolidate(z)
  srv <- http_server(root)
  expect_no_partial_match({
    h <- open_zarr(srv$url_of())
    expect_tree_values(h)
    capture.output(print(h), print(h[["/g/rect"]]), str(h[["/g/rect"]]))
    dst <- local_store_path()
    h$save_to(dst)
    saved <- open_zarr(dst)
    expect_tree_values(saved)
    # every chunk of the 3 x 2 rectilinear grid, none more
    keys <- setdiff(list.files(file.path(dst, "g", "rect"), recursive = TRUE), "zarr.json")
    expect_setequal(gsub("[^0-9]", "", keys), c("00", "01", "10", "11", "20", "21"))
    meta <- jsonlite::read_json(file.path(dst, "g", "rect", "zarr.json"))
    expect_identical(names(meta$chunk_grid$configuration), c("kind", "chunk_shapes"))
    expect_null(meta[["chunk_grid"]][["configuration"]][["chunk_shape"]])
    # and into memory, in v3 through a single rectilinear array at the root
    m <- zarr_memorystore$new()
    h$save_to(m)
    expect_tree_values(zarr$new(m))
  })
})

test_that("metadata keys that extend the expected ones are not taken for them", {
  root <- local_store_path()
  z <- create_zarr(root)
  a <- z$add_array("/", "a", define_array("int32", c(4)))
  a[] <- 1:4
  f <- file.path(root, "a", "zarr.json")
  m <- jsonlite::read_json(f)
  # an array without attributes but with a key that starts like it
  m$attributes <- NULL
  # (extension fields a reader may skip: unknown ones otherwise refuse the array)
  m$attributes_extra <- list(must_understand = FALSE, x = 1)
  m$dimension_names_note <- list(must_understand = FALSE, note = "n")
  jsonlite::write_json(m, f, auto_unbox = TRUE, pretty = TRUE)
  expect_no_partial_match({
    a <- open_zarr(root)[["/a"]]
    expect_identical(a[], 1:4)
    expect_length(a$attributes, 0L)
    expect_null(a$dimension_names)
  })
})
