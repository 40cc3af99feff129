# What this build of zarr lacks: the codecs of the optional libraries that
# configure did not find, and libxml2 (zarr_capabilities()).
codec_missing <- function(codec) codec %in% names(zarr::zarr_capabilities()$missing_codecs)

skip_without_codec <- function(...) {
  for (codec in c(...)) {
    if (codec_missing(codec)) {
      lib <- zarr::zarr_capabilities()$missing_codecs[[codec]]
      testthat::skip(sprintf("this build of zarr lacks %s (the %s codec)", lib, codec))
    }
  }
}

skip_without_libxml2 <- function() {
  v <- zarr::zarr_capabilities()$libraries
  if (is.na(v$version[v$library == "libxml2"])) testthat::skip("this build of zarr lacks libxml2")
}
