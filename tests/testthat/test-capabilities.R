# Optional libraries (configure, zarr_capabilities()): a build without
# c-blosc, lz4, bzip2, liblzma, libzfp or libxml2 lacks what it provides, and using
# it fails with zarr_error_unsupported naming the codec (or feature) and the
# library; tools/check-optional.sh installs such builds and runs this file.

optional_codecs <- list(
  blosc = list(name = "blosc", cfg = list(cname = "lz4", clevel = 5L, shuffle = "shuffle"), lib = "c-blosc"),
  lz4 = list(name = "numcodecs.lz4", cfg = list(acceleration = 1L), lib = "liblz4"),
  bz2 = list(name = "numcodecs.bz2", cfg = list(level = 1L), lib = "libbz2"),
  lzma = list(name = "numcodecs.lzma", cfg = list(), lib = "liblzma"),
  zfp = list(name = "zfp", cfg = list(mode = "reversible"), lib = "libzfp")
)

test_that("zarr_capabilities() lists the libraries, and a missing one's codecs", {
  caps <- zarr_capabilities()
  libs <- caps$libraries
  expect_identical(libs$library, c("zstd", "zlib", "c-blosc", "liblz4", "libbz2", "liblzma",
                                   "libzfp", "libcurl", "libcrypto", "libxml2"))
  expect_identical(libs$required, libs$library %in% c("zstd", "zlib", "libcurl", "libcrypto"))
  expect_false(anyNA(libs$version[libs$required]))
  expect_match(libs$version[libs$library == "zstd"], "^[0-9]+\\.[0-9]+")
  # a codec is missing exactly when its library is
  lib_of <- vapply(optional_codecs, `[[`, "", "lib")
  absent <- libs$library[is.na(libs$version)]
  expect_setequal(names(caps$missing_codecs), names(lib_of)[lib_of %in% absent])
  expect_identical(unname(caps$missing_codecs), unname(lib_of[names(caps$missing_codecs)]))
})

test_that("an optional codec round-trips, or fails as unsupported naming its library", {
  for (cd in names(optional_codecs)) {
    spec <- optional_codecs[[cd]]
    path <- withr::local_tempfile(fileext = ".zarr")
    z <- create_zarr(path)
    def <- define_array("int32", 20)
    def$chunk_shape <- 8
    def$remove_codec("zstd")
    def$add_codec(spec$name, spec$cfg)
    arr <- z$add_array("/", "x", def)
    if (codec_missing(cd)) {
      err <- expect_error(arr$write(1:20), class = "zarr_error_unsupported", info = cd)
      expect_match(conditionMessage(err), sprintf("codec '%s'", cd), fixed = TRUE, info = cd)
      expect_match(conditionMessage(err), spec$lib, fixed = TRUE, info = cd)
      # an array written elsewhere: its chunks cannot be read either
      dir.create(file.path(path, "x", "c"), showWarnings = FALSE)
      writeBin(as.raw(1:40), file.path(path, "x", "c", "0"))
      expect_error(open_zarr(path, read_only = TRUE)[["/x"]]$read(), class = "zarr_error_unsupported",
                   info = cd)
    } else {
      arr$write(1:20)
      expect_identical(open_zarr(path, read_only = TRUE)[["/x"]]$read(), 1:20, info = cd)
    }
  }
})

test_that("without libxml2 listings fail as unsupported; with it they parse", {
  body <- charToRaw(paste0('<?xml version="1.0" encoding="UTF-8"?><ListBucketResult><Name>b</Name>',
                           '<IsTruncated>false</IsTruncated><Contents><Key>k/zarr.json</Key><Size>5</Size>',
                           '</Contents></ListBucketResult>'))
  libs <- zarr_capabilities()$libraries
  if (is.na(libs$version[libs$library == "libxml2"])) {
    expect_error(.Call(zarr:::ffi_s3_parse_list, body, "s3://b"), class = "zarr_error_unsupported",
                 regexp = "libxml2")
    expect_error(.Call(zarr:::ffi_azure_parse_list, body, "az://b"), class = "zarr_error_unsupported",
                 regexp = "libxml2")
    expect_null(.Call(zarr:::ffi_xml_text, body, "Name"))
  } else {
    expect_identical(.Call(zarr:::ffi_s3_parse_list, body, "s3://b")$keys, "k/zarr.json")
    expect_identical(.Call(zarr:::ffi_xml_text, body, "Name"), "b")
  }
})
