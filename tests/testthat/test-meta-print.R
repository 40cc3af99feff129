# print() and str() write to standard output (r-lib style: format() gives the
# lines, print() writes them with cat() and returns its argument invisibly),
# with and without cli: capture.output() sees everything, and nothing goes
# to the message stream (stderr).

# stdout lines of `expr`, failing when anything reaches stderr or a message
# is signalled.
stdout_only <- function(expr) {
  msgs <- character()
  err <- capture.output(type = "message", {
    out <- withCallingHandlers(capture.output(expr), message = function(m) {
      msgs <<- c(msgs, conditionMessage(m))
    })
  })
  expect_identical(msgs, character())
  expect_identical(err, character())
  out
}

print_objects <- function() {
  z <- create_zarr(local_store_path(parent.frame(2)))
  g <- z$add_group("/", "g")
  g$set_attribute("title", "demo")
  g$set_attribute("nested", list(a = 1, b = list(c = "x")))
  d <- define_array("float64", c(6, 4))
  d$chunk_shape <- c(3, 2)
  a <- z$add_array("/g", "a", d)
  a[] <- matrix(as.numeric(1:24), 6, 4)
  a$set_attribute("units", "m")
  list(zarr = z, group = g, array = a, store = z$store, codec = a$codecs[[1]],
       data_type = a$data_type, grid = a$chunking, memory = zarr_memorystore$new())
}

for (with_cli in c(FALSE, TRUE)) {
  test_that(sprintf("print() and format() write lines to stdout only (cli %s)", with_cli), {
    if (with_cli) skip_if_not_installed("cli")
    withr::local_options(zarr.cli = with_cli, cli.num_colors = 1)
    objs <- print_objects()
    for (nm in names(objs)) {
      x <- objs[[nm]]
      out <- stdout_only(res <- withVisible(print(x)))
      expect_true(length(out) > 0L, info = nm)
      expect_false(res$visible, info = nm)
      expect_identical(res$value, x, info = nm)
      expect_identical(format(x), out, info = nm)
    }
    out <- stdout_only(print(objs$array))
    expect_true(any(grepl("^Shape +: 6 x 4", out)))
    expect_true(any(grepl("units", out, fixed = TRUE)))
    out <- stdout_only(print(objs$group))
    expect_true(any(grepl("title", out, fixed = TRUE)))
    out <- stdout_only(print(objs$zarr))
    expect_true(any(grepl("Arrays +: 1", out)))
    expect_true(any(grepl("a  float64 [6 x 4]", out, fixed = TRUE)))
    for (x in objs[c("zarr", "group", "array")]) expect_length(stdout_only(str(x)), 1L)
  })
}

test_that("an HTTP store and its array print to stdout", {
  root <- local_store_path()
  z <- create_zarr(root)
  z$add_array("/", "a", define_array("int32", c(4)))
  zarr_consolidate(z) # else opening says once (a message) that groups cannot be listed
  srv <- http_server(root)
  h <- open_zarr(srv$url_of())
  for (x in list(h, h$store, h[["/a"]])) expect_true(length(stdout_only(print(x))) > 0L)
})

test_that("a print in Rscript goes to stdout, with cli", {
  skip_if_not_installed("cli")
  script <- tempfile(fileext = ".R")
  on.exit(unlink(script), add = TRUE)
  writeLines(c("library(zarr)", "z <- as_zarr(matrix(1:6, 2))", "print(z)", "print(z$root)"), script)
  rscript <- file.path(R.home("bin"), "Rscript")
  env <- paste0("R_LIBS=", paste(.libPaths(), collapse = .Platform$path.sep))
  errf <- tempfile()
  on.exit(unlink(errf), add = TRUE)
  out <- suppressWarnings(system2(rscript, shQuote(script), stdout = TRUE, stderr = errf, env = env))
  expect_true(any(grepl("Shape +: 2 x 3", out)))
  expect_true(any(grepl("<Zarr object>", out, fixed = TRUE)))
  expect_identical(readLines(errf), character())
})
