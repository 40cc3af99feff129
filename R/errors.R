# Every failure is a classed condition: c("zarr_error_<kind>", "zarr_error",
# "error", "condition"), carrying the array path and store key it concerns.

zarr_abort <- function(kind, message, array = NULL, key = NULL, call = NULL) {
  where <- character()
  if (length(array) && nzchar(array)) where <- c(where, sprintf("array '%s'", array))
  if (length(key) && nzchar(key)) where <- c(where, sprintf("key '%s'", key))
  full <- if (length(where)) paste0(message, " [", paste(where, collapse = ", "), "]") else message
  cond <- structure(
    class = c(paste0("zarr_error_", kind), "zarr_error", "error", "condition"),
    list(message = full, call = call, kind = kind, array = array, key = key)
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
