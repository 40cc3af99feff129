# S3 answers are XML read with libxml2: listings and error documents read the
# same indented (MinIO, moto, LocalStack) as compact (AWS, s3rver), and
# hostile documents are refused, never expanded.

skip_without_libxml2() # a build without libxml2: test-capabilities.R

xml_env <- new.env()
xml_s3 <- function() {
  if (!is.null(xml_env$s3) && xml_env$s3$process$is_alive()) return(xml_env$s3)
  xml_env$s3 <- s3_server(env = testthat::teardown_env())
  xml_env$s3
}

parse_list <- function(xml) .Call(zarr:::ffi_s3_parse_list, charToRaw(enc2utf8(xml)), "s3://test")
xml_text <- function(xml, tag) .Call(zarr:::ffi_xml_text, charToRaw(enc2utf8(xml)), tag)

test_that("a ListObjectsV2 page reads the same indented and compact, with namespaces, CDATA and entities", {
  compact <- paste0(
    '<?xml version="1.0" encoding="UTF-8"?>',
    '<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>b</Name><Prefix>p/</Prefix>',
    '<KeyCount>3</KeyCount><MaxKeys>1000</MaxKeys><IsTruncated>true</IsTruncated>',
    '<Contents><Key>p/zarr.json</Key><LastModified>2026-01-01T00:00:00.000Z</LastModified>',
    '<ETag>&quot;x&quot;</ETag><Size>123</Size><StorageClass>STANDARD</StorageClass></Contents>',
    '<Contents><Key>p/a &amp; b/c&lt;1&gt;</Key><Size>0</Size></Contents>',
    '<Contents><Key><![CDATA[p/é 数据]]></Key><Size>6000000000</Size></Contents>',
    '<CommonPrefixes><Prefix>p/g1/</Prefix></CommonPrefixes><CommonPrefixes><Prefix>p/g 2/</Prefix></CommonPrefixes>',
    '<NextContinuationToken>tok+/=</NextContinuationToken></ListBucketResult>')
  # whitespace between elements only: inside <Key> it would be part of the key
  indented <- gsub("(?<!<Key>|]])><(?!!\\[CDATA)", ">\n    <", compact, perl = TRUE)
  want <- list(keys = c("p/zarr.json", "p/a & b/c<1>", "p/é 数据"), sizes = c(123, 0, 6e9),
               prefixes = c("p/g1/", "p/g 2/"), truncated = TRUE, token = "tok+/=")
  expect_identical(parse_list(compact), want)
  expect_identical(parse_list(indented), want)
  expect_identical(Encoding(parse_list(compact)$keys[3]), "UTF-8")
  # a last page: no token, not truncated; no keys at all
  last <- "<ListBucketResult>\n  <IsTruncated>false</IsTruncated>\n</ListBucketResult>\n"
  expect_identical(parse_list(last), list(keys = character(), sizes = numeric(), prefixes = character(),
                                          truncated = FALSE, token = NULL))
  # Keys nested elsewhere (an Owner's, say) are not objects
  odd <- "<ListBucketResult><Owner><Key>no</Key></Owner><Contents><Key>k</Key></Contents></ListBucketResult>"
  expect_identical(parse_list(odd)$keys, "k")
  expect_identical(parse_list(odd)$sizes, NA_real_)
})

test_that("what is not a listing is an error, never an empty listing", {
  bad <- c("", "not xml", "<ListBucketResult><Contents><Key>a</Key>", # cut short
           "<Error><Code>AccessDenied</Code><Message>no</Message></Error>",
           "<ListBucketResult><Contents><Size>1</Size></Contents></ListBucketResult>",
           "<ListBucketResult><Contents><Key>a</Key><Size>-1</Size></Contents></ListBucketResult>",
           "<ListBucketResult><Contents><Key>a</Key><Size>1e3x</Size></Contents></ListBucketResult>",
           "<ListBucketResult><Contents><Key>a</Key><Size>1e3</Size></Contents></ListBucketResult>",
           "<ListBucketResult><Contents><Key>a</Key><Size>0x10</Size></Contents></ListBucketResult>")
  for (x in bad) expect_error(parse_list(x), class = "zarr_error_s3", info = x)
  expect_error(parse_list("<Error/>"), "s3://test.*not a ListBucketResult", class = "zarr_error_s3")
})

test_that("DOCTYPEs, entity bombs and external entities are refused; huge bodies are not parsed", {
  laughs <- paste0('<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">',
                   paste0(sprintf('<!ENTITY lol%d "%s">', 1:9,
                                  vapply(0:8, function(i) strrep(sprintf("&lol%s;", if (i) i else ""), 10), "")),
                          collapse = ""),
                   ']><ListBucketResult><Contents><Key>&lol9;</Key></Contents></ListBucketResult>')
  expect_error(parse_list(laughs), "DOCTYPE", class = "zarr_error_s3")
  secret <- withr::local_tempfile(lines = "top secret")
  xxe <- sprintf('<?xml version="1.0"?><!DOCTYPE r [<!ENTITY x SYSTEM "file://%s">]><ListBucketResult><Contents><Key>&x;</Key></Contents></ListBucketResult>', secret)
  expect_error(parse_list(xxe), "DOCTYPE", class = "zarr_error_s3")
  expect_null(xml_text(sub("ListBucketResult><Contents><Key>&x;</Key></Contents></ListBucketResult",
                           "Error><Code>&x;</Code></Error", xxe, fixed = TRUE), "Code"))
  ext <- '<?xml version="1.0"?><!DOCTYPE r SYSTEM "http://127.0.0.1:1/x.dtd"><ListBucketResult/>'
  expect_error(parse_list(ext), "DOCTYPE", class = "zarr_error_s3")
  huge <- c(charToRaw("<ListBucketResult>"), as.raw(rep(0x20, 64 * 2^20)), charToRaw("</ListBucketResult>"))
  expect_error(.Call(zarr:::ffi_s3_parse_list, huge, "s3://test"), "64 MiB", class = "zarr_error_s3")
  # deep nesting stops at libxml2's limit instead of the stack
  deep <- paste0("<ListBucketResult>", strrep("<a>", 1e5), strrep("</a>", 1e5), "</ListBucketResult>")
  expect_error(parse_list(deep), class = "zarr_error_s3")
})

test_that("S3 error documents read indented and compact", {
  doc <- "<?xml version=\"1.0\"?><Error><Code>NoSuchKey</Code><Message>The key &amp; more</Message></Error>"
  expect_identical(xml_text(doc, "Code"), "NoSuchKey")
  expect_identical(xml_text(gsub("><", ">\n  <", doc), "Message"), "The key & more")
  expect_null(xml_text(doc, "UploadId"))
  expect_null(xml_text("<Error><Code>x</Code>", "Code")) # not well-formed
})

test_that("an S3 server that indents its XML: hierarchies list, shrink-then-grow and save_to() are right", {
  s3 <- xml_s3()
  on.exit(s3$indent(FALSE), add = TRUE)
  st <- s3$store("private", "indent.zarr")
  st$create_group("/", "")
  z <- zarr$new(st)
  z$add_group("/", "g")
  x <- matrix(as.numeric(1:80), 8)
  d <- define_array("float64", dim(x))
  d$chunk_shape <- c(2, 5)
  z$add_array("/g", "a", d)$write(x)
  compact <- list(dir = st$list_dir(""), keys = st$list_prefix(""), size = st$getsize("g/a/zarr.json"))
  s3$indent(TRUE)
  # the server does indent now
  res <- zarr:::s3_request(st$io_spec(), "GET", "", zarr:::s3_query(list(`list-type` = "2")), at_bucket = TRUE)
  expect_match(rawToChar(res$body), "\n  <Contents>", fixed = TRUE)
  expect_identical(list(dir = st$list_dir(""), keys = st$list_prefix(""), size = st$getsize("g/a/zarr.json")),
                   compact)
  expect_length(compact$keys, 3 + 8)
  expect_identical(names(zarr$new(s3$store("private", "indent.zarr"))[["/"]]$children), "g")
  # shrink then grow: the cut-off values do not come back
  a <- zarr$new(s3$store("private", "indent.zarr"))[["/g/a"]]
  a$resize(c(3, 10))
  a$resize(c(8, 10))
  want <- x
  want[4:8, ] <- NA
  expect_identical(a[, ], want)
  # save_to() refuses a location that holds something
  withr::local_envvar(c(AWS_ENDPOINT_URL = s3$endpoint, AWS_ACCESS_KEY_ID = s3$key,
                        AWS_SECRET_ACCESS_KEY = s3$secret))
  src <- as_zarr(matrix(1:4, 2))
  expect_error(src$save_to("s3://private/indent.zarr"), class = "zarr_error_exists")
  expect_identical(a[, ], want)
  # errors explained by indented documents
  err <- expect_error(s3$store("no-such-bucket")$list_dir(""), class = "zarr_error_s3")
  expect_identical(err$s3_code, "NoSuchBucket")
})
