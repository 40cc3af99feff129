#' What this installation of zarr can do
#'
#' The C libraries this installation was built with. zstd, zlib, libcurl
#' and libcrypto are always there; c-blosc, lz4, bzip2, liblzma, libzfp and
#' libxml2 are optional: when the package was installed on a system without one,
#' the codec it provides is left out (reading or writing an array that uses
#' it fails with an error of class `zarr_error_unsupported` naming the codec
#' and the library), and without libxml2 the listings of S3 buckets and Azure
#' containers are. Installing the library's development files (see the
#' package's README) and reinstalling zarr brings them back.
#'
#' @return A list of two:
#'   * `libraries`: a data frame with one row per library: `library`,
#'     `version` (`NA` when this build lacks it), `required` (`TRUE` for
#'     the libraries every build has) and `used_for`.
#'   * `missing_codecs`: a character vector naming, for each codec this
#'     build lacks, the library it needs (named by codec; empty when
#'     nothing is missing).
#' @export
#' @examples
#' caps <- zarr_capabilities()
#' caps$libraries[, c("library", "version")]
#' caps$missing_codecs
zarr_capabilities <- function() {
  x <- .Call(ffi_capabilities)
  v <- x$versions
  used_for <- c(
    zstd = "the zstd codec", zlib = "the gzip and zlib codecs, zip stores",
    "c-blosc" = "the blosc codec", liblz4 = "the lz4 codec", libbz2 = "the bz2 codec",
    liblzma = "the lzma codec", libzfp = "the zfp codec", libcurl = "HTTP, S3, GCS and Azure stores",
    libcrypto = "signed S3 and Azure requests",
    libxml2 = "listing S3 buckets and Azure containers, S3 multipart uploads")
  required <- c("zstd", "zlib", "libcurl", "libcrypto")
  libs <- data.frame(library = names(v), version = unname(v),
                     required = names(v) %in% required,
                     used_for = unname(used_for[names(v)]),
                     stringsAsFactors = FALSE)
  list(libraries = libs, missing_codecs = x$missing)
}
