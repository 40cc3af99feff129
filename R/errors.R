# Every failure is a classed condition: c("zarr_error_<kind>", "zarr_error",
# "error", "condition"), carrying the array path and store key it concerns.

zarr_abort <- function(kind, message, array = NULL, key = NULL, call = NULL) {
  where <- character()
  if (length(array) && nzchar(array)) where <- c(where, sprintf("array '%s'", array))
  if (length(key) && nzchar(key)) where <- c(where, sprintf("key '%s'", key))
  full <- if (length(where)) paste0(message, " [", paste(where, collapse = ", "), "]") else message
  fields <- list(message = full, call = call, kind = kind, array = array, key = key)
  extra <- NULL
  if (identical(kind, "s3")) {
    # "S3 error <Code>: <Message> (HTTP <status> ...": the code and message as fields
    extra <- "zarr_error_http"
    m <- regmatches(message, regexec("^S3 error ([^: ]+): (.*?) \\((HTTP ([0-9]+)|completing|deleting)", message, perl = TRUE))[[1]]
    fields$s3_code <- if (length(m)) m[2L] else NA_character_
    fields$s3_message <- if (length(m)) m[3L] else NA_character_
    fields$status <- if (length(m) && nzchar(m[5L])) as.integer(m[5L]) else NA_integer_
  }
  cond <- structure(
    class = c(paste0("zarr_error_", kind), extra, "zarr_error", "error", "condition"),
    fields
  )
  stop(cond)
}

# Called from C (errors.c) after the C side has released its resources.
c_error <- function(kind, message, array = NULL, key = NULL) {
  zarr_abort(kind, message, array = array, key = key)
}

zarr_warn <- function(kind, message) {
  cond <- structure(
    class = c(paste0("zarr_warning_", kind), "zarr_warning", "warning", "condition"),
    list(message = message, call = NULL)
  )
  warning(cond)
}
