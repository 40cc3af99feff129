# R/r6_fast.R: this package's classes are built from a per-class plan; the
# objects must be laid out exactly as R6's own constructor lays them out.

r6_layout <- function(o) {
  e <- o$.__enclos_env__
  levels <- list()
  while (!is.null(e)) {
    b <- e$super
    levels[[length(levels) + 1L]] <- list(
      enclos = sort(ls(e, all.names = TRUE)), active = names(e$.__active__),
      parent = environmentName(parent.env(e)), bind = if (!is.null(b)) sort(ls(b, all.names = TRUE)))
    e <- if (is.null(b)) NULL else b$.__enclos_env__
  }
  pub <- sort(ls(o, all.names = TRUE))
  list(class = class(o), public = pub, private = sort(ls(e <- o$.__enclos_env__$private, all.names = TRUE)),
       locked = environmentIsLocked(o), levels = levels,
       locked_bindings = vapply(pub, bindingIsLocked, TRUE, env = o),
       active = vapply(pub, bindingIsActive, TRUE, env = o))
}

test_that("objects of the plan constructor are laid out as R6's own", {
  path <- file.path(withr::local_tempdir(), "s.zarr")
  z0 <- create_zarr(path)
  z0$add_array("/", "a", define_array("int32", c(4, 3)))$write(matrix(1:12, 4, 3))
  st1 <- zarr_localstore$new(path)
  st2 <- zarr_localstore$.__r6_new__(path)
  expect_identical(r6_layout(st1), r6_layout(st2))
  z1 <- zarr$new(st1)
  z2 <- zarr$.__r6_new__(st2)
  expect_identical(r6_layout(z1), r6_layout(z2))
  expect_identical(r6_layout(z1$root), r6_layout(z2$root))
  expect_identical(r6_layout(z1[["/a"]]), r6_layout(z2[["/a"]]))
  expect_identical(r6_layout(zarr_data_type$new("uint16", 7L)), r6_layout(zarr_data_type$.__r6_new__("uint16", 7L)))
  expect_identical(r6_layout(chunk_grid_regular$new(c(10, 10), c(5, 5))),
                   r6_layout(chunk_grid_regular$.__r6_new__(c(10, 10), c(5, 5))))
  # methods reach their own object, super$ and active bindings work
  expect_identical(z1[["/a"]][2, 3], 10L)
  expect_identical(z1[["/a"]]$shape, c(4L, 3L))
  expect_identical(zarr_data_type$new("uint16", 7L)$fill_value, 7L)
  # a deep clone is a distinct hierarchy over the same store
  zc <- z1$clone(deep = TRUE)
  expect_false(identical(zc$root, z1$root))
  expect_identical(zc[["/a"]][, ], matrix(1:12, 4, 3))
  # errors of initialize() are the same
  expect_error(zarr_data_type$new("no-such-type"), class = "zarr_error")
  expect_error(zarr_data_type$.__r6_new__("no-such-type"), class = "zarr_error")
})

test_that("a method added with $set() reaches objects made afterwards", {
  on.exit({
    zarr_data_type$public_methods$r6_plan_probe <- NULL
    rm(list = ls(r6_plans, all.names = TRUE), envir = r6_plans)
  }, add = TRUE)
  before <- zarr_data_type$new("int8")
  zarr_data_type$set("public", "r6_plan_probe", function() paste("probe", self$data_type))
  after <- zarr_data_type$new("int8")
  expect_null(before$r6_plan_probe)
  expect_identical(after$r6_plan_probe(), "probe int8")
})

test_that("a finalize() method of a class built from a plan runs when the object is collected", {
  # (the plan says whether there is one: no class of this package has it)
  on.exit({
    zarr_data_type$private_methods$finalize <- NULL
    rm(list = ls(r6_plans, all.names = TRUE), envir = r6_plans)
    options(zarr.test_finalized = NULL)
  }, add = TRUE)
  expect_false(r6_plan(zarr_data_type, "zarr_data_type")$finalizes)
  zarr_data_type$set("private", "finalize", function() options(zarr.test_finalized = TRUE))
  expect_true(r6_plan(zarr_data_type, "zarr_data_type")$finalizes)
  local(zarr_data_type$new("int8"))
  invisible(gc())
  expect_true(isTRUE(getOption("zarr.test_finalized")))
})

test_that("the domains this package registers are laid out as R6 makes them", {
  for (g in list(zarr_ome_domain, zarr_vectors_domain))
    expect_identical(r6_layout(g$new()), r6_layout(g$.__r6_new__()))
})

test_that("every class of the package is in the plan constructor's list", {
  ns <- asNamespace("zarr")
  gens <- Filter(function(n) inherits(get(n, envir = ns), "R6ClassGenerator"), ls(ns, all.names = TRUE))
  expect_setequal(zarr:::r6_class_names, gens)
  skip_if_not(utils::packageVersion("R6") < "3.0.0")
  for (n in gens) expect_false(is.null(get(n, envir = ns)$.__r6_new__), info = n)
  # a codec object's methods keep their byte code (R6's constructor dropped it on R < 4.5)
  compiled <- function(f) any(grepl("<bytecode", utils::capture.output(print(f)), fixed = TRUE))
  expect_identical(compiled(zarr_codec_zstd$new()$encode), compiled(zarr_codec_zstd$public_methods$encode))
  expect_identical(compiled(define_array("int32", 3)$add_codec), compiled(array_builder$public_methods$add_codec))
})
