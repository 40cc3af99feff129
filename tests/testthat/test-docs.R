# Every help page that documents an exported function or class shows how to
# use it: it has an \examples section, and none of its examples is hidden in
# \dontrun (R CMD check runs \donttest; network use waits for
# `if (interactive())`). Read from the installed package's Rd database, so
# the pages checked are the ones users get.

rd_tags <- function(x) {
  own <- attr(x, "Rd_tag")
  if (!is.list(x)) return(own)
  c(own, unlist(lapply(x, rd_tags), use.names = FALSE))
}

rd_aliases <- function(rd) {
  top <- vapply(rd, function(e) attr(e, "Rd_tag") %||% "", "")
  unlist(lapply(rd[top == "\\alias"], function(e) trimws(paste(unlist(e), collapse = ""))))
}

test_that("every page documenting an export has examples, and none uses \\dontrun", {
  skip_on_cran()
  db <- tools::Rd_db("zarr")
  expect_gt(length(db), 50L)
  s3 <- getNamespaceInfo("zarr", "S3methods")
  documented <- c(getNamespaceExports("zarr"), paste(s3[, 1L], s3[, 2L], sep = "."))

  pages <- names(db)
  exported <- vapply(db, function(rd) any(rd_aliases(rd) %in% documented), TRUE)
  has_examples <- vapply(db, function(rd) "\\examples" %in% rd_tags(rd), TRUE)
  uses_dontrun <- vapply(db, function(rd) "\\dontrun" %in% rd_tags(rd), TRUE)

  # the test sees the pages it is about
  expect_true(all(c("zarr_array.Rd", "zarr_codec_gzip.Rd", "zarr_s3store.Rd") %in% pages[exported]))
  expect_identical(pages[exported & !has_examples], character(0))
  expect_identical(pages[uses_dontrun], character(0))
})
