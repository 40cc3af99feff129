# The work metadata operations do, counted in store requests (issue 13, item
# 3): a change costs its own documents plus one consolidated update, never a
# walk of the hierarchy; opening a node reads only what it needs.

# A memory store that records every request made through R, chunk reads of
# the C engine included (they go through get()).
counting_store <- R6::R6Class("counting_store",
  inherit = zarr_memorystore,
  public = list(
    log = NULL,
    reset = function() {
      self$log <- list(get = character(), set = character(), list = character(), exists = character(),
                       erase = character())
      invisible(self)
    },
    get = function(key, prototype = NULL, byte_range = NULL) {
      self$log$get <- c(self$log$get, key)
      super$get(key, prototype, byte_range)
    },
    set = function(key, value) {
      self$log$set <- c(self$log$set, key)
      super$set(key, value)
    },
    exists = function(key) {
      self$log$exists <- c(self$log$exists, key)
      super$exists(key)
    },
    erase = function(key) {
      self$log$erase <- c(self$log$erase, key)
      super$erase(key)
    },
    list_dir = function(prefix) {
      self$log$list <- c(self$log$list, prefix)
      super$list_dir(prefix)
    },
    list_prefix = function(prefix) {
      self$log$list <- c(self$log$list, prefix)
      super$list_prefix(prefix)
    },
    io_spec = function() {
      if (is.null(private$.cio)) {
        store_io_r <- get("store_io_r", envir = asNamespace("zarr"))
        private$.cio <- store_io_r(
          get = function(keys) lapply(keys, function(k) self$get(k)),
          set = function(key, value) self$set(key, value),
          erase = function(key) self$erase(key))
      }
      private$.cio
    }
  ),
  private = list(.cio = NULL)
)

# A hierarchy of `groups` groups of `arrays` small arrays, consolidated or not.
counted_tree <- function(format, groups = 4L, arrays = 10L, consolidate = TRUE) {
  withr::local_options(zarr.format = format)
  store <- counting_store$new()
  store$reset()
  store$create_group("/", "")
  z <- zarr$new(store)
  for (g in seq_len(groups)) {
    z$add_group("/", paste0("g", g))
    for (a in seq_len(arrays)) {
      d <- define_array("int32", 6)
      d$chunk_shape <- 3
      z$add_array(paste0("/g", g), paste0("a", a), d)
    }
  }
  z[["/g2/a3"]][] <- 1:6
  if (consolidate) zarr_consolidate(z)
  store$reset()
  store
}

consolidated_doc <- function(store, format) {
  rawToChar(store$get(if (format == 2L) ".zmetadata" else "zarr.json"))
}

# After a change, the consolidated document is the one a full rebuild from the
# store writes.
expect_same_as_rebuild <- function(store, format, info = NULL) {
  before <- consolidated_doc(store, format)
  zarr_consolidate(zarr$new(store))
  expect_identical(before, consolidated_doc(store, format), info = info)
}

for (format in c(2L, 3L)) {
  test_that(sprintf("v%d: set_attribute, delete_attributes and dimension_names<- make one consolidated update, no walk", format), {
    store <- counted_tree(format)
    z <- zarr$new(store)
    node <- z[["/g3/a7"]]
    store$reset()
    node$set_attribute("units", "m")
    # the node's own document (v2: .zattrs) and the consolidated copy
    expect_identical(sort(store$log$set),
                     sort(c(if (format == 2L) "g3/a7/.zattrs" else "g3/a7/zarr.json",
                            if (format == 2L) ".zmetadata" else "zarr.json")))
    expect_length(store$log$get, 0L)
    expect_length(store$log$list, 0L)
    expect_match(consolidated_doc(store, format), "\"units\": \"m\"", fixed = TRUE)
    expect_same_as_rebuild(store, format, "set_attribute")

    z <- zarr$new(store)
    node <- z[["/g3/a7"]]
    node$set_attribute("other", 1L)
    store$reset()
    node$delete_attributes("units")
    expect_length(store$log$set, 2L)
    expect_length(store$log$get, 0L)
    expect_length(store$log$list, 0L)
    expect_no_match(consolidated_doc(store, format), "\"units\"", fixed = TRUE)
    expect_same_as_rebuild(store, format, "delete_attributes")

    z <- zarr$new(store)
    node <- z[["/g1/a2"]]
    store$reset()
    node$dimension_names <- "x"
    expect_length(store$log$set, 2L)
    expect_length(store$log$get, 0L)
    expect_length(store$log$list, 0L)
    expect_same_as_rebuild(store, format, "dimension_names")
    expect_identical(zarr$new(store)[["/g1/a2"]]$dimension_names, "x")

    # the root group: its attributes are part of the consolidated document
    z <- zarr$new(store)
    store$reset()
    z$root$set_attribute("title", "t")
    expect_length(store$log$set, if (format == 2L) 2L else 1L)
    expect_length(store$log$get, 0L)
    expect_length(store$log$list, 0L)
    expect_same_as_rebuild(store, format, "root attribute")
    expect_identical(zarr$new(store)$root$attributes$title, "t")
  })

  test_that(sprintf("v%d: creating and deleting nodes costs the same in a small and a large hierarchy", format), {
    work <- function(groups, consolidate) {
      store <- counted_tree(format, groups = groups, consolidate = consolidate)
      z <- zarr$new(store)
      store$reset()
      d <- define_array("float64", c(4, 4))
      z$add_array("/g1", "new", d)
      z$add_group("/g2", "sub")
      z$add_array("/g2/sub", "deep", d)
      z$delete_array("/g1/a1")
      counts <- lengths(store$log)
      if (consolidate) expect_same_as_rebuild(store, format, paste(groups, "groups"))
      counts
    }
    for (consolidate in c(TRUE, FALSE)) {
      small <- work(2L, consolidate)
      large <- work(6L, consolidate)
      expect_identical(small, large, info = paste("consolidated:", consolidate))
      expect_lte(small[["set"]], 3L + 4L * consolidate)
    }
  })

  test_that(sprintf("v%d: opening a store and reading one element reads only what that needs", format), {
    store <- counted_tree(format, consolidate = FALSE)
    z <- zarr$new(store)
    expect_identical(z[["/g2/a3"]][2], 2L)
    expect_length(store$log$list, 0L)
    meta_keys <- function(prefix) paste0(prefix, c("zarr.json", ".zarray", ".zgroup", ".zattrs"))
    chunk <- if (format == 2L) "g2/a3/0" else "g2/a3/c.0"
    allowed <- c(meta_keys(""), ".zmetadata", meta_keys("g2/"), meta_keys("g2/a3/"), chunk)
    expect_true(all(store$log$get %in% allowed), info = paste(setdiff(store$log$get, allowed), collapse = " "))
    expect_lte(sum(startsWith(store$log$get, "g2/a3/") & !grepl("json|[.]z", store$log$get)), 1L)

    # with consolidated metadata: the root document (v2: and .zmetadata), then the chunk
    store <- counted_tree(format)
    z <- zarr$new(store)
    expect_identical(z[["/g2/a3"]][2], 2L)
    expect_length(store$log$list, 0L)
    expect_true(all(store$log$get %in% c(meta_keys(""), ".zmetadata", chunk)),
                info = paste(store$log$get, collapse = " "))
    # siblings were not opened, but are all there when asked for
    expect_identical(length(z[["/g2"]]$children), 10L)
    expect_identical(z[["/g2"]]$children$a3, z[["/g2/a3"]])
  })
}

test_that("get_node() finds the same nodes as listing, and nothing else", {
  withr::local_options(zarr.format = 2L)
  z <- create_zarr()
  z$add_group("/", "g")$add_array("a", define_array("int32", 2))
  expect_null(z[["/.zgroup"]])
  expect_null(z[["/g/.zarray"]])
  expect_null(z[["/nothing"]])
  expect_null(z[["/g/a/b"]])
  expect_s3_class(z[["/g/a"]], "zarr_array")
  expect_error(z$add_array("/", "g", define_array("int32", 2)), class = "zarr_error_exists")
  expect_error(zarr$new(z$store)$add_group("/g", "a"), class = "zarr_error_exists")
})
