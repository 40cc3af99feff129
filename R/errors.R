# Every failure is a classed condition: c("zarr_error_<kind>", "zarr_error",
# "error", "condition"), carrying the array path and store key it concerns.
# Its message and fields pass through redact(): no condition shows a secret.

# Text with its secrets replaced by "***": the user-info of URLs
# ("https://***@host/...") and the values of query parameters that carry
# credentials ("?X-Amz-Signature=***"; see src/redact.c for the names). The
# one redaction of the package: every print(), format(), message, warning,
# error, progress label and public field that may show a URL goes through
# it; stores keep the real URL privately for their requests.
redact <- function(x) {
  if (is.null(x)) return(x)
  y <- enc2utf8(as.character(x))
  names(y) <- names(x)
  .Call(ffi_redact, y)
}

zarr_abort <- function(kind, message, array = NULL, key = NULL, call = NULL, interrupt = FALSE) {
  where <- character()
  if (length(array) && nzchar(array)) where <- c(where, sprintf("array '%s'", array))
  if (length(key) && nzchar(key)) where <- c(where, sprintf("key '%s'", key))
  full <- if (length(where)) paste0(message, " [", paste(where, collapse = ", "), "]") else message
  fields <- list(message = redact(full), call = call, kind = kind, array = redact(array), key = redact(key))
  extra <- NULL
  if (kind %in% c("s3", "azure")) {
    # "S3 error <Code>: <Message> (HTTP <status> ...": the code and message as
    # fields s3_code and s3_message (Azure: "Azure error", azure_code, ...)
    extra <- "zarr_error_http"
    m <- regmatches(message, regexec("^(?:S3|Azure) error ([^: ]+): (.*?) \\((HTTP ([0-9]+)|completing|deleting)", message, perl = TRUE))[[1]]
    fields[[paste0(kind, "_code")]] <- if (length(m)) m[2L] else NA_character_
    fields[[paste0(kind, "_message")]] <- if (length(m)) redact(m[3L]) else NA_character_
    fields$status <- if (length(m) && nzchar(m[5L])) as.integer(m[5L]) else NA_integer_
  }
  if (kind == "icechunk_stale") extra <- "zarr_error_icechunk" # a stale virtual chunk is an Icechunk error
  cond <- structure(
    class = c(paste0("zarr_error_", kind), extra, "zarr_error", "error", if (interrupt) "interrupt", "condition"),
    fields
  )
  stop(cond)
}

# Called from C (errors.c) after the C side has released its resources.
# From C, "interrupted" is the user's interrupt (Ctrl-C) stopping a call:
# also of R's class "interrupt", so that tryCatch(interrupt = ) sees it.
c_error <- function(kind, message, array = NULL, key = NULL) {
  zarr_abort(kind, message, array = array, key = key, interrupt = identical(kind, "interrupted"))
}

zarr_warn <- function(kind, message) {
  cond <- structure(
    class = c(paste0("zarr_warning_", kind), "zarr_warning", "warning", "condition"),
    list(message = redact(message), call = NULL)
  )
  warning(cond)
}
