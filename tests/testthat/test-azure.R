# Azure Blob storage against Azurite, which checks Shared Key and SAS
# signatures as Azure does; @azure/storage-blob (Microsoft's client) writes
# and reads the same blobs as an independent implementation.

az_env <- new.env()
az_fixture <- function() {
  if (!is.null(az_env$az) && az_env$az$process$is_alive()) return(az_env$az)
  az_env$az <- azure_server(env = testthat::teardown_env())
  az_env$az
}

az_conn <- function(az, ...) {
  paste0("DefaultEndpointsProtocol=http;AccountName=", az$account, ";BlobEndpoint=", az$endpoint, ";", ...)
}

test_that("azure:// URLs and connection strings are read as Azure documents them", {
  u <- zarr:::azure_parse_url("abfss://data@myacct.dfs.core.windows.net/a/b.zarr/")
  expect_identical(u[c("container", "account", "suffix", "prefix")],
                   list(container = "data", account = "myacct", suffix = "core.windows.net", prefix = "a/b.zarr"))
  u <- zarr:::azure_parse_url("az://box/x/y")
  expect_identical(u[c("container", "prefix")], list(container = "box", prefix = "x/y"))
  expect_error(zarr:::azure_parse_url("az:///x"), class = "zarr_error_argument")
  expect_error(zarr:::azure_parse_url("abfs://nocontainer.dfs.core.windows.net/x"), class = "zarr_error_argument")
  withr::local_envvar(c(AZURE_STORAGE_CONNECTION_STRING = NA, AZURE_STORAGE_ACCOUNT = NA, AZURE_STORAGE_KEY = NA,
                        AZURE_STORAGE_SAS_TOKEN = NA))
  cfg <- zarr:::azure_config(connection_string = paste0(
    "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=", azure_test_key, ";EndpointSuffix=core.chinacloudapi.cn"))
  expect_identical(cfg$endpoint, "https://acct.blob.core.chinacloudapi.cn")
  expect_identical(cfg[c("account", "auth", "source", "key")],
                   list(account = "acct", auth = "shared key", source = "connection string", key = azure_test_key))
  cfg <- zarr:::azure_config(connection_string = "BlobEndpoint=http://127.0.0.1:10000/dev1;SharedAccessSignature=?sv=1&sig=x=")
  expect_identical(cfg[c("account", "auth", "sas", "endpoint")],
                   list(account = "dev1", auth = "sas", sas = "sv=1&sig=x=", endpoint = "http://127.0.0.1:10000/dev1"))
  cfg <- zarr:::azure_config(connection_string = "UseDevelopmentStorage=true")
  expect_identical(cfg[c("account", "auth", "endpoint")],
                   list(account = "devstoreaccount1", auth = "shared key", endpoint = "http://127.0.0.1:10000/devstoreaccount1"))
  withr::local_envvar(c(AZURE_STORAGE_ACCOUNT = "envacct", AZURE_STORAGE_SAS_TOKEN = "sv=2&sig=y"))
  cfg <- zarr:::azure_config()
  expect_identical(cfg[c("account", "auth", "source", "endpoint")],
                   list(account = "envacct", auth = "sas", source = "environment",
                        endpoint = "https://envacct.blob.core.windows.net"))
  expect_identical(zarr:::azure_config(anonymous = TRUE)$auth, "anonymous")
  withr::local_envvar(c(AZURE_STORAGE_ACCOUNT = NA, AZURE_STORAGE_SAS_TOKEN = NA))
  expect_error(zarr:::azure_config(), class = "zarr_error_argument")
  expect_error(zarr_azurestore$new("c", account = "a", key = "not base64!", endpoint = "http://127.0.0.1:9"),
               class = "zarr_error_store")
})

test_that("Shared Key: v3 and v2 hierarchies with sharded arrays round trip; open_zarr('az://') finds the connection string", {
  az <- az_fixture()
  for (fmt in c(3L, 2L)) {
    withr::local_options(zarr.format = fmt)
    st <- az$store("private", paste0("rt", fmt))
    st$create_group("/", "")
    z <- zarr$new(st)
    x <- matrix(as.double(1:600), 20, 30)
    d <- define_array("float64", dim(x))
    d$chunk_shape <- c(10, 10)
    z$add_array("/", "plain", d)$write(x)
    if (fmt == 3L) {
      d <- define_array("int32", c(40, 40))
      d$chunk_shape <- c(20, 20)
      d$add_codec("sharding_indexed", list(chunk_shape = c(5, 5)))
      y <- matrix(1:1600, 40, 40)
      z$add_array("/", "sharded", d)$write(y)
    }
    z$add_group("/", "g")
    withr::local_envvar(AZURE_STORAGE_CONNECTION_STRING = az_conn(az, "AccountKey=", az$key))
    z2 <- open_zarr(paste0("az://private/rt", fmt))
    expect_s3_class(z2$store, "zarr_azurestore")
    expect_identical(z2$store$version, fmt)
    expect_identical(z2[["/plain"]][, ], x)
    expect_identical(z2[["/plain"]][3:12, 8:21], x[3:12, 8:21])
    if (fmt == 3L) {
      expect_identical(z2[["/sharded"]][, ], y)
      expect_identical(z2[["/sharded"]][7:9, 33], y[7:9, 33]) # byte ranges of a shard
    }
    expect_true(z2$store$is_group("g"))
    expect_identical(z2$store$credentials[c("account", "auth", "source")],
                     list(account = az$account, auth = "shared key", source = "connection string"))
  }
  # create_zarr and as_zarr at az:// locations
  withr::local_envvar(AZURE_STORAGE_CONNECTION_STRING = az_conn(az, "AccountKey=", az$key))
  z <- create_zarr("az://private/created")
  expect_true(z$store$is_group("/"))
  expect_error(create_zarr("az://private/created"), class = "zarr_error_exists")
  a <- as_zarr(array(1:24, 2:4), location = "az://private/asz")
  expect_identical(open_zarr("az://private/asz")$root[, , ], array(1:24, 2:4))
  z3 <- zarr$new("az://private/asz", protocol = "azure")
  expect_true(z3$store$read_only)
})

test_that("a wrong key is AuthenticationFailed, a zarr_error_azure that does not show the key", {
  az <- az_fixture()
  local_fast_retries(1L)
  wrong <- "d3Jvbmcta2V5LXdyb25nLWtleS13cm9uZy1rZXktd3Jvbmcta2V5LXdyb25nLWtleXh4eA=="
  st <- zarr_azurestore$new("private", "wk", endpoint = az$endpoint, account = az$account, key = wrong)
  e <- tryCatch(st$set("k", as.raw(1:3)), error = identity)
  expect_s3_class(e, "zarr_error_azure")
  expect_s3_class(e, "zarr_error_http")
  # Azure says AuthenticationFailed, Azurite AuthorizationFailure
  expect_match(e$azure_code, "^(AuthenticationFailed|AuthorizationFailure)$")
  expect_identical(e$status, 403L)
  e2 <- tryCatch(st$get("k"), error = identity)
  expect_s3_class(e2, "zarr_error_azure")
  e3 <- tryCatch(st$list_prefix(""), error = identity)
  expect_s3_class(e3, "zarr_error_azure")
  for (x in list(e, e2, e3)) {
    expect_false(grepl(wrong, conditionMessage(x), fixed = TRUE))
    expect_false(any(grepl(substr(wrong, 1, 20), unlist(x[c("message", "azure_message")]), fixed = TRUE)))
  }
  # a container that is not there
  e <- tryCatch(az$store("nosuch")$list_prefix(""), error = identity)
  expect_s3_class(e, "zarr_error_azure")
  expect_identical(e$azure_code, "ContainerNotFound")
  withr::local_envvar(AZURE_STORAGE_CONNECTION_STRING = az_conn(az, "AccountKey=", az$key))
  expect_error(open_zarr("az://private/nothing-here"), class = "zarr_error_not_found")
})

test_that("SAS tokens: a read-only one reads and lists but cannot write; a full one writes", {
  az <- az_fixture()
  local_fast_retries(1L)
  st <- az$store("private", "sas")
  st$set("zarr.json", charToRaw('{"zarr_format":3,"node_type":"group","attributes":{}}'))
  st$set("v", as.raw(0:99))
  ro <- zarr_azurestore$new("private", "sas", endpoint = az$endpoint, sas = az$sas_read)
  expect_identical(ro$credentials$auth, "sas")
  expect_identical(ro$get("v", byte_range = c(10, 20)), as.raw(10:19))
  expect_identical(ro$list_prefix(""), c("v", "zarr.json"))
  e <- tryCatch(ro$set("w", as.raw(1)), error = identity)
  expect_s3_class(e, "zarr_error_azure")
  expect_match(e$azure_code, "^Authorization")
  expect_identical(e$status, 403L)
  e <- tryCatch(ro$erase("v"), error = identity)
  expect_s3_class(e, "zarr_error_azure")
  expect_identical(st$get("v"), as.raw(0:99))
  # with "?" and through a connection string
  withr::local_envvar(AZURE_STORAGE_CONNECTION_STRING = az_conn(az, "SharedAccessSignature=?", az$sas_write))
  rw <- zarr_azurestore$new("private", "sas")
  rw$set("w", as.raw(7:9))
  expect_identical(st$get("w"), as.raw(7:9))
  rw$erase("w")
  expect_null(st$get("w"))
  # a SAS for another container does not open this one
  e <- tryCatch(zarr_azurestore$new("public", "", endpoint = az$endpoint, sas = az$sas_read)$set("x", as.raw(1)),
                error = identity)
  expect_s3_class(e, "zarr_error_azure")
})

test_that("public containers read anonymously; anonymous writes and private reads are refused", {
  az <- az_fixture()
  local_fast_retries(1L)
  pub <- az$store("public", "data")
  as_zarr(matrix(1:12, 3, 4), name = "m", location = zarr$new(pub)$root %||% {
    pub$create_group("/", "")
    zarr$new(pub)$root
  })
  anon <- zarr_azurestore$new("public", "data", endpoint = az$endpoint, anonymous = TRUE)
  expect_identical(anon$credentials$auth, "anonymous")
  expect_identical(zarr$new(anon)[["/m"]][, ], matrix(1:12, 3, 4))
  expect_true("m/zarr.json" %in% anon$list_prefix(""))
  e <- tryCatch(anon$set("x", as.raw(1)), error = identity)
  expect_s3_class(e, "zarr_error_http")
  priv <- zarr_azurestore$new("private", "rt3", endpoint = az$endpoint, anonymous = TRUE)
  expect_null(priv$get("zarr.json"))
  expect_error(priv$list_prefix(""), class = "zarr_error_http")
})

test_that("values above the block size go up as blocks; @azure/storage-blob reads ours and we read its", {
  az <- az_fixture()
  withr::local_options(zarr.azure_block_size = 2^20)
  st <- az$store("private", "blocks")
  set.seed(5)
  v <- as.raw(sample.int(256, 3.5 * 2^20, replace = TRUE) - 1L)
  st$set("big", v)
  expect_equal(jsonlite::fromJSON(az$client("blocks", "private", "blocks/big")), c(rep(2^20, 3), 0.5 * 2^20))
  expect_identical(st$get("big"), v)
  expect_identical(st$getsize("big"), length(v) * 1)
  expect_identical(st$get("big", byte_range = c(2^20 - 2, 2^20 + 2)), v[(2^20 - 1):(2^20 + 2)])
  expect_identical(st$get("big", byte_range = -5), utils::tail(v, 5))
  f <- withr::local_tempfile()
  az$client("get", "private", "blocks/big", f)
  expect_identical(readBin(f, "raw", file.size(f)), v)
  # small values: one Put Blob
  st$set("small", as.raw(1:5))
  expect_identical(jsonlite::fromJSON(az$client("blocks", "private", "blocks/small")), list())
  # a store written by the other client
  src <- withr::local_tempdir()
  zl <- create_zarr(file.path(src, "s.zarr"))
  d <- define_array("int16", c(30, 7))
  d$chunk_shape <- c(8, 7)
  zl$add_array("/", "b", d)$write(matrix(1:210, 30, 7))
  for (k in list.files(file.path(src, "s.zarr"), recursive = TRUE))
    az$client("put", "private", paste0("fromjs/", k), file.path(src, "s.zarr", k))
  expect_identical(zarr$new(az$store("private", "fromjs"))[["/b"]][, ], matrix(1:210, 30, 7))
  expect_setequal(jsonlite::fromJSON(az$client("list", "private", "fromjs/")),
                  paste0("fromjs/", list.files(file.path(src, "s.zarr"), recursive = TRUE)))
})

test_that("listing follows continuation markers; erase_prefix and erase delete", {
  az <- az_fixture()
  st <- az$store("private", "many")
  st$create_group("/", "")
  d <- define_array("int32", 40)
  d$chunk_shape <- 1
  zarr$new(st)$add_array("/", "a", d)$write(seq_len(40))
  l <- st$list_objects("a/", max_results = 7)
  expect_length(l$keys, 41L)
  expect_true(all(l$sizes > 0))
  expect_setequal(st$list_prefix("a/"), c("a/zarr.json", paste0("a/c/", 0:39)))
  l <- st$list_objects("", delimiter = "/", max_results = 1)
  expect_identical(l$prefixes, "many/a/")
  expect_identical(l$keys, "many/zarr.json")
  expect_identical(st$list_dir(""), c("a", "zarr.json"))
  expect_identical(st$key_sizes("a/c")[["a/c/3"]], st$getsize("a/c/3"))
  st$erase("a/c/5")
  st$erase("a/c/5")
  expect_identical(zarr$new(st)[["/a"]][1:7], c(1:5, NA, 7L))
  st$erase_prefix("a")
  expect_identical(st$list_prefix(""), "zarr.json")
  ro <- az$store("private", "many", read_only = TRUE)
  expect_error(ro$set("x", as.raw(1)), class = "zarr_error_read_only")
})

test_that("names with spaces, non-ASCII and reserved characters are signed and listed as they are", {
  az <- az_fixture()
  st <- az$store("private", "sp ace/é")
  st$set("dir/é x+y=z&w", as.raw(1:3))
  expect_identical(st$get("dir/é x+y=z&w"), as.raw(1:3))
  expect_identical(st$get("dir/é x+y=z&w", byte_range = -2), as.raw(2:3))
  # suffixes (asked for by their offset once the length is known): longer than
  # the value, of an empty value, of a missing key
  expect_identical(st$get("dir/é x+y=z&w", byte_range = -10), as.raw(1:3))
  st$set("empty", raw(0))
  expect_identical(st$get("empty", byte_range = -4), raw(0))
  expect_null(st$get("nothere", byte_range = -4))
  st$erase("empty")
  expect_identical(st$list_prefix(""), "dir/é x+y=z&w")
  expect_identical(jsonlite::fromJSON(az$client("list", "private", "sp ace/")), "sp ace/é/dir/é x+y=z&w")
  # zarr$new() passes its further arguments to the store
  z <- zarr$new("az://private/viaargs", protocol = "azure", read_only = FALSE, endpoint = az$endpoint,
                key = az$key, account = az$account)
  expect_s3_class(z$store, "zarr_azurestore")
  expect_false(z$store$read_only)
})

test_that("an array whose one chunk is above the block size is written in blocks and reads back", {
  az <- az_fixture()
  withr::local_options(zarr.azure_block_size = 2^20)
  st <- az$store("private", "onechunk")
  st$create_group("/", "")
  x <- array(as.double(seq_len(400 * 500)), c(400, 500))
  d <- define_array("float64", dim(x))
  d$chunk_shape <- dim(x)
  d$remove_codec("zstd")
  zarr$new(st)$add_array("/", "a", d)$write(x)
  expect_gt(length(jsonlite::fromJSON(az$client("blocks", "private", "onechunk/a/c/0/0"))), 1L)
  expect_identical(zarr$new(az$store("private", "onechunk"))[["/a"]][, ], x)
  expect_identical(zarr$new(az$store("private", "onechunk"))[["/a"]][399:400, 2], x[399:400, 2])
})

test_that("an Azure store says how to open it again without its key, and a DelayedArray seed reopens it", {
  az <- az_fixture()
  st <- az$store("private", "reopen")
  st$create_group("/", "")
  z <- zarr$new(st)
  x <- matrix(as.double(1:60), 6, 10)
  z$add_array("/", "m", define_array("float64", dim(x)))$write(x)
  spec <- st$reopen_spec()
  expect_identical(spec$kind, "azure")
  expect_identical(spec$location, "az://private/reopen")
  expect_false(grepl(az$key, paste(deparse(spec), collapse = ""), fixed = TRUE))
  withr::local_envvar(AZURE_STORAGE_CONNECTION_STRING = az_conn(az, "AccountKey=", az$key))
  st2 <- zarr:::reopen_store(spec)
  expect_s3_class(st2, "zarr_azurestore")
  expect_identical(zarr$new(st2)[["/m"]][], x)
})
