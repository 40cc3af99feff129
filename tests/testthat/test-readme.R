# The R chunks of README.md run as written, in order, in one fresh
# environment: a chunk whose first line is "# not run: <reason>" is left
# out, one whose first line is "# needs: <packages>" runs when they are
# installed (the convention the README states above its examples).

# The ```r chunks of a Markdown file: a list of character vectors (lines).
markdown_r_chunks <- function(path) {
  lines <- readLines(path, encoding = "UTF-8", warn = FALSE)
  starts <- which(lines == "```r")
  ends <- which(lines == "```")
  lapply(starts, function(s) {
    e <- ends[ends > s][1]
    if (is.na(e)) stop("unterminated chunk at line ", s, " of ", path)
    lines[seq_len(e - s - 1L) + s]
  })
}

# "run", or why the chunk is left out.
readme_chunk_status <- function(chunk) {
  first <- trimws(chunk[1])
  if (startsWith(first, "# not run:")) return(first)
  if (startsWith(first, "# needs:")) {
    pkgs <- trimws(strsplit(sub("^# needs:", "", first), ",")[[1]])
    missing <- pkgs[!vapply(pkgs, requireNamespace, logical(1), quietly = TRUE)]
    if (length(missing)) return(paste("missing", paste(missing, collapse = ", ")))
  }
  "run"
}

# Evaluates a chunk's expressions one by one in `env`, printing visible
# values as the console would (so print methods run too); NULL when it ran,
# else the error's message.
run_markdown_chunk <- function(chunk, env) {
  tryCatch({
    exprs <- parse(text = chunk, keep.source = FALSE)
    utils::capture.output(suppressPackageStartupMessages(for (e in exprs) {
      r <- withVisible(eval(e, env))
      if (r$visible) print(r$value)
    }))
    NULL
  }, error = function(e) conditionMessage(e))
}

test_that("markdown_r_chunks() and the marks find what the README convention says", {
  md <- withr::local_tempfile(fileext = ".md")
  writeLines(c("text", "```r", "x <- 1", "```", "```sh", "ls", "```",
               "```r", "# not run: needs network", "open_zarr('https://example.org/a.zarr')", "```",
               "```r", "# needs: zarr, a.package.that.is.not.there", "y", "```"), md)
  ch <- markdown_r_chunks(md)
  expect_identical(ch, list("x <- 1", c("# not run: needs network", "open_zarr('https://example.org/a.zarr')"),
                            c("# needs: zarr, a.package.that.is.not.there", "y")))
  expect_identical(vapply(ch, readme_chunk_status, ""),
                   c("run", "# not run: needs network", "missing a.package.that.is.not.there"))
  expect_match(run_markdown_chunk("stop('boom')", new.env()), "boom")
})

test_that("every R chunk of README.md runs as written, in order", {
  skip_on_cran()
  readme <- testthat::test_path("../../README.md")
  skip_if_not(file.exists(readme), "README.md is not here (not the source tree)")
  chunks <- markdown_r_chunks(readme)
  expect_gt(length(chunks), 10L)
  status <- vapply(chunks, readme_chunk_status, "")
  # the setup chunk, and the core examples, always run
  expect_identical(status[[1]], "run")

  withr::local_dir(withr::local_tempdir())
  withr::local_options(zarr.progress = FALSE)
  old_options <- options()
  withr::defer(options(old_options))
  withr::local_preserve_seed()
  attached <- search()
  withr::defer(for (p in setdiff(search(), attached)) if (startsWith(p, "package:"))
    try(detach(p, character.only = TRUE), silent = TRUE))
  # a chunk that failed between mirai::daemons(2) and daemons(0)
  withr::defer(if (requireNamespace("mirai", quietly = TRUE)) mirai::daemons(0))
  env <- new.env(parent = globalenv())
  for (i in seq_along(chunks)) {
    if (status[[i]] != "run") next
    err <- run_markdown_chunk(chunks[[i]], env)
    if (!is.null(err))
      fail(paste0("README chunk ", i, " failed: ", err, "\n",
                  paste(chunks[[i]], collapse = "\n")))
    else succeed()
  }
  # what the examples compute, checked where the README states it
  expect_identical(dim(env$elev[, ]), c(87L, 61L))
  expect_identical(env$t2m$shape, c(1000L, 500L))
  expect_identical(env$a$shape, c(10L, 2L))
  # chunks left out for a missing suggested package: a skip, a failure on CI
  missing <- grep("^missing ", status, value = TRUE)
  require_or_skip(length(missing) == 0L, paste("for README chunks,", paste(unique(missing), collapse = "; ")))
})
