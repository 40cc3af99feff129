# Secrets are used, never shown (issue 19, defects 9 and 10, and the one
# redaction function): every store kind is driven with credentials (a
# password in the URL, signed-URL queries, S3 keys with a session token, a
# GCS emulator URL with a password, signed targets in Kerchunk references)
# and everything the package shows is scanned: print(), format(), str(),
# `root`, `uri` and every other public field, messages, warnings and errors
# (404, 403, 503, timeouts, redirects, bad signatures), with their fields.

# Values that must appear nowhere.
secret <- c(password = "PW-SECRET-1", signature = "SIG-SECRET-2", token = "TOK-SECRET-3",
            credential = "CRED-SECRET-4", sas = "SAS-SECRET-5", access_token = "AT-SECRET-6",
            key = "KEY-SECRET-7")

# A signed-URL query carrying all of them but the password.
secret_query <- paste0("X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=", secret[["credential"]],
                       "&X-Amz-Security-Token=", secret[["token"]], "&X-Amz-Signature=", secret[["signature"]],
                       "&sv=2022-11-02&se=2030-01-01&sig=", secret[["sas"]], "&access_token=",
                       secret[["access_token"]], "&key=", secret[["key"]])

# The character strings inside a value (lists and conditions, recursively).
strings_in <- function(x) {
  if (is.character(x)) return(x[!is.na(x)])
  if (is.list(x)) return(unlist(lapply(unclass(x), strings_in), use.names = FALSE))
  character()
}

# Everything `expr` shows: what it prints, its messages and warnings, the
# error it raises (message and every string field, parents included) and
# str() of its value.
shown_by <- function(expr) {
  seen <- character()
  note <- function(cnd) seen <<- c(seen, conditionMessage(cnd), strings_in(cnd))
  out <- utils::capture.output(type = "output", {
    value <- withCallingHandlers(
      tryCatch(expr, error = function(e) {
        note(e)
        NULL
      }),
      message = function(m) {
        note(m)
        invokeRestart("muffleMessage")
      },
      warning = function(w) {
        note(w)
        invokeRestart("muffleWarning")
      })
    utils::str(value)
  })
  c(seen, out)
}

# Everything an object shows: print(), format(), str() and its public fields.
shown_of <- function(obj) {
  out <- c(shown_by(print(obj)), shown_by(format(obj)), shown_by(utils::str(obj)))
  if (inherits(obj, "R6")) {
    if (is.function(obj$format)) out <- c(out, shown_by(obj$format()))
    for (nm in setdiff(ls(obj), ".__enclos_env__")) {
      v <- tryCatch(obj[[nm]], error = function(e) conditionMessage(e))
      if (!is.function(v) && !inherits(v, "R6")) out <- c(out, strings_in(v), shown_by(utils::str(v)))
    }
  }
  out
}

expect_nothing_secret <- function(text, secrets = secret, what = "") {
  for (s in secrets) {
    hit <- grep(s, text, fixed = TRUE, value = TRUE)
    expect(length(hit) == 0L, sprintf("%s shows the secret '%s' in: %s", what, s, paste(head(hit, 3), collapse = " | ")))
  }
  invisible(text)
}

# A served directory: data.zarr (v3: group with array /a, int32 20 x 20 in
# chunks of 10 x 10; no consolidated metadata), data.bin (raw int32 for
# references) and refs.json (references into data.bin with signed targets).
secrets_server <- function(env = parent.frame()) {
  skip_without_http_server()
  dir <- withr::local_tempdir(.local_envir = env)
  z <- create_zarr(file.path(dir, "data.zarr"))
  x <- matrix(1:400, 20, 20)
  d <- define_array("int32", c(20, 20))
  d$chunk_shape <- c(10, 10)
  z$add_array("/", "a", d)$write(x)
  writeBin(1:12, file.path(dir, "data.bin"), size = 4, endian = "little")
  srv <- http_server(dir, env = env)
  list(srv = srv, dir = dir, x = x)
}

# userinfo "alice:<password>" in an URL of the server
with_password <- function(url) sub("^http://", paste0("http://alice:", secret[["password"]], "@"), url)

test_that("the redaction: user-info and credential-bearing query values become ***", {
  r <- zarr:::redact
  expect_identical(r("https://u:p@h.org/a/b?versionId=3&X-Amz-Signature=abc#f"),
                   "https://***@h.org/a/b?versionId=3&X-Amz-Signature=***#f")
  expect_identical(r("error for http://tok@127.0.0.1:80/x (3 attempts)"), "error for http://***@127.0.0.1:80/x (3 attempts)")
  expect_identical(r(paste0("https://h/x?", secret_query)),
                   paste0("https://h/x?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=***&X-Amz-Security-Token=***",
                          "&X-Amz-Signature=***&sv=2022-11-02&se=2030-01-01&sig=***&access_token=***&key=***"))
  # a password holding '@' is redacted whole; text without URLs stays as it is
  expect_identical(r("s3://bucket/key, https://u:p@ss@h/x, key 'a=b'"), "s3://bucket/key, https://***@h/x, key 'a=b'")
  expect_identical(r(c(a = "plain", b = NA)), c(a = "plain", b = NA))
  expect_identical(r(character()), character())
  # redacting twice changes nothing more (a value that starts in an
  # authority ends with it: the fuzzer's case, and a signed one)
  for (x in c("I://&Key=?&@", "https://h&sig=abc?&@x", "https://h&sig=abc/p?key=1@x"))
    expect_identical(r(r(x)), r(x), info = x)
  expect_identical(r("https://h&sig=abc/p"), "https://h&sig=***/p")
})

test_that("an HTTP store with a password and a signed query shows neither, whatever happens", {
  local_fast_retries(1L)
  withr::local_options(list(zarr.http_low_speed_time = 1, zarr.http_connect_timeout = 2))
  h <- secrets_server()
  srv <- h$srv
  u <- paste0(with_password(srv$url_of("data.zarr")), "?", secret_query)
  shown <- character()
  z <- NULL
  shown <- c(shown, shown_by(z <- open_zarr(u)))
  expect_s3_class(z, "zarr")
  st <- z$store
  shown <- c(shown, shown_by(v <- z[["/a"]][, ]))
  expect_identical(v, h$x)
  # the secrets did go over the wire
  log <- srv$stats()$log
  expect_true(all(log$auth))
  expect_true(all(grepl(secret[["signature"]], log$query, fixed = TRUE)))
  expect_identical(st$root, sprintf("http://***@127.0.0.1:%d/data.zarr", srv$port))
  expect_match(st$uri, "X-Amz-Signature=***", fixed = TRUE)
  shown <- c(shown, shown_of(st), shown_of(z), shown_of(z[["/a"]]), shown_by(print(z[["/a"]])),
             shown_by(z$store$list_dir("")), # a message: it cannot be listed
             shown_by(z[["/nothing"]]), shown_by(z$store$set("k", raw(1))))
  # errors: 404 metadata, 403, 503, a timeout, a redirect to a refused scheme
  u_of <- function(profile) paste0(with_password(srv$url_of("data.zarr", profile = profile)), "?", secret_query)
  for (p in c("notfound=zarr.json", "fail=1,status=403", "fail=1,status=503", "hang=1",
              "redirect=file%3A%2F%2F%2Ftmp", "only=c.0.0%24,fail=1,status=403")) {
    e <- shown_by(open_zarr(u_of(p))[["/a"]][, ])
    expect_true(length(e) > 0L, info = p)
    shown <- c(shown, e)
  }
  err <- tryCatch(open_zarr(u_of("fail=1,status=403")), error = identity)
  expect_s3_class(err, "zarr_error_http")
  expect_match(conditionMessage(err), sprintf("http://***@127.0.0.1:%d/fail=1,status=403/data.zarr", srv$port),
               fixed = TRUE)
  expect_nothing_secret(shown, what = "the HTTP store")
})

test_that("reference files and their targets: signed URLs and passwords are used, never shown", {
  local_fast_retries(1L)
  h <- secrets_server()
  srv <- h$srv
  target <- paste0(with_password(srv$url_of("data.bin")), "?", secret_query)
  refs <- list(
    ".zgroup" = list(zarr_format = 2L),
    "x/.zarray" = list(zarr_format = 2L, shape = list(12L), chunks = list(4L), dtype = "<i4",
                       compressor = NULL, filters = NULL, fill_value = 0L, order = "C"),
    "x/0" = list(target, 0L, 16L),
    "x/1" = list(target, 16L, 16L),
    "x/2" = list(target, 32L, 16L))
  jsonlite::write_json(refs, file.path(h$dir, "refs.json"), auto_unbox = TRUE, null = "null")
  # the reference file itself behind a signed URL with a password
  loc <- paste0(with_password(srv$url_of("refs.json")), "?", secret_query)
  shown <- character()
  shown <- c(shown, shown_by(z <- open_zarr(paste0("reference+json://", loc))))
  expect_identical(z[["/x"]][], 1:12)
  log <- srv$stats()$log
  expect_true(all(log$auth))
  expect_true(all(grepl(secret[["sas"]], log$query, fixed = TRUE)))
  st <- z$store
  expect_match(st$root, "sig=***", fixed = TRUE)
  expect_match(st$targets, "X-Amz-Signature=***", fixed = TRUE)
  shown <- c(shown, shown_of(st), shown_of(z), shown_of(z[["/x"]]))
  # a list of references, and references that fail: a 404 target, a 403
  # target, a target of an unsupported scheme, a missing reference file
  shown <- c(shown, shown_of(zarr_refstore$new(refs)))
  bad <- function(t) {
    r <- refs
    r[["x/1"]] <- list(t, 0L, 16L)
    shown_by(zarr$new(zarr_refstore$new(r))[["/x"]][])
  }
  for (t in c(paste0(with_password(srv$url_of("nothing.bin")), "?", secret_query),
              paste0(with_password(srv$url_of("data.bin", profile = "fail=1,status=403")), "?", secret_query),
              paste0("ftp://alice:", secret[["password"]], "@127.0.0.1/data.bin?", secret_query))) {
    e <- bad(t)
    expect_true(any(grepl("error|exist|not supported|403", e)), info = t)
    shown <- c(shown, e)
  }
  shown <- c(shown, shown_by(zarr_refstore$new(paste0(with_password(srv$url_of("no-refs.json")), "?", secret_query))),
             shown_by(open_zarr(paste0(with_password(srv$url_of("refs.json", profile = "fail=1,status=403")), "?",
                                       secret_query))))
  expect_nothing_secret(shown, what = "the reference store")
})

test_that("S3 stores with a key, secret and session token show none of the secrets", {
  s3 <- s3_server()
  local_s3_fast()
  secrets <- c(s3$token_secret, s3$token, "WRONG-SECRET-8", "WRONG-TOKEN-9")
  shown <- character()
  shown <- c(shown, shown_by(st <- zarr_s3store$new("private", "trust", endpoint = s3$endpoint,
                                                    access_key = s3$token_key, secret_key = s3$token_secret,
                                                    session_token = s3$token)))
  st$create_group("/", "")
  z <- zarr$new(st)
  x <- matrix(as.double(1:100), 10)
  d <- define_array("float64", c(10, 10))
  d$chunk_shape <- c(5, 5)
  shown <- c(shown, shown_by(z$add_array("/", "a", d)$write(x)))
  expect_identical(z[["/a"]][, ], x)
  shown <- c(shown, shown_of(st), shown_of(z), shown_of(z[["/a"]]), shown_by(st$list_prefix("")))
  # failures: a wrong secret, a wrong token, a missing bucket, a read-only write
  wrong <- zarr_s3store$new("private", "trust", endpoint = s3$endpoint, access_key = s3$token_key,
                            secret_key = "WRONG-SECRET-8", session_token = s3$token)
  shown <- c(shown, shown_by(wrong$get("zarr.json")), shown_by(wrong$list_prefix("")), shown_of(wrong))
  wrong_token <- zarr_s3store$new("private", "trust", endpoint = s3$endpoint, access_key = s3$token_key,
                                  secret_key = s3$token_secret, session_token = "WRONG-TOKEN-9")
  e <- shown_by(wrong_token$get("zarr.json"))
  expect_true(any(grepl("InvalidToken", e)))
  shown <- c(shown, e, shown_of(wrong_token))
  nob <- zarr_s3store$new("no-such-bucket", "", endpoint = s3$endpoint, access_key = s3$token_key,
                          secret_key = s3$token_secret, session_token = s3$token, read_only = TRUE)
  shown <- c(shown, shown_by(nob$get("zarr.json")), shown_by(nob$set("k", raw(1))),
             shown_by(s3_list_dir("private", endpoint = s3$endpoint, access_key = s3$token_key,
                                  secret_key = s3$token_secret, session_token = s3$token)))
  # the environment's credentials, as open_zarr() finds them
  withr::local_envvar(c(AWS_ENDPOINT_URL = s3$endpoint, AWS_ACCESS_KEY_ID = s3$token_key,
                        AWS_SECRET_ACCESS_KEY = s3$token_secret, AWS_SESSION_TOKEN = s3$token))
  shown <- c(shown, shown_by(z2 <- open_zarr("s3://private/trust")), shown_of(z2), shown_of(z2$store),
             shown_by(open_zarr("s3://private/none")))
  expect_nothing_secret(shown, secrets, what = "the S3 store")
})

test_that("gs:// through an emulator URL with a password shows no password", {
  local_fast_retries(1L)
  h <- secrets_server()
  dir.create(file.path(h$dir, "bucket"))
  file.copy(file.path(h$dir, "data.zarr"), file.path(h$dir, "bucket"), recursive = TRUE)
  withr::local_envvar(c(STORAGE_EMULATOR_HOST = with_password(h$srv$url)))
  shown <- shown_by(z <- open_zarr("gs://bucket/data.zarr"))
  shown <- c(shown, shown_by(v <- z[["/a"]][, ]))
  expect_identical(v, h$x)
  expect_true(all(h$srv$stats()$log$auth))
  shown <- c(shown, shown_of(z$store), shown_of(z), shown_by(open_zarr("gs://bucket/nothing.zarr")))
  expect_nothing_secret(shown, what = "the GCS store")
})

test_that("local and memory stores pass what they show through the same redaction", {
  # keys and paths that look like URLs with secrets (the only way these stores meet one)
  p <- paste0("https:", "//alice:", secret[["password"]], "@x/k?sig=", secret[["sas"]])
  z <- create_zarr(withr::local_tempdir())
  z$add_array("/", "a", define_array("int32", 4))$write(1:4)
  m <- zarr$new(zarr_memorystore$new())
  shown <- c(shown_by(z$store$get(p)), shown_by(z$store$set(p, raw(1))), shown_by(z[[p]]),
             shown_by(z[["/a"]]$read(list(p))), shown_by(m$store$get(p)), shown_by(m[[p]]),
             shown_by(open_zarr(file.path(tempdir(), p))), shown_of(z$store), shown_of(m$store))
  expect_nothing_secret(shown, secret[c("password", "sas")], what = "the local and memory stores")
})

test_that("progress labels pass through the redaction", {
  skip_if_not_installed("cli")
  withr::local_options(list(zarr.progress = TRUE, zarr.progress_after = 0,
                            cli.progress_handlers_only = "cli", cli.progress_show_after = 0, cli.dynamic = FALSE))
  # a label that holds a URL with a password and a signed query, through the
  # bar that save_to() uses (driven slowly enough for cli to draw it)
  label <- paste0("Copying from ", with_password("http://127.0.0.1/x.zarr"), "?", secret_query)
  bars <- character()
  withCallingHandlers({
    bar <- zarr:::r_progress(label, 3)
    for (i in 1:3) {
      Sys.sleep(0.3)
      bar(i)
    }
    bar(NULL)
  }, message = function(m) {
    bars <<- c(bars, conditionMessage(m))
    invokeRestart("muffleMessage")
  })
  expect_true(any(grepl("Copying from http://***@127.0.0.1/x.zarr?", bars, fixed = TRUE))) # drawn, redacted
  expect_nothing_secret(bars, what = "progress bars")
})

test_that("Azure stores with an account key or a SAS token show neither", {
  az <- azure_server()
  local_fast_retries(1L)
  sig <- function(sas) sub("&.*$", "", sub("^.*?sig=", "", sas))
  wrong_key <- "V1JPTkctS0VZLTEwLVdST05HLUtFWS0xMC1XUk9ORy1LRVktMTAtV1JPTkctS0VZLTEwLVhY"
  wrong_sas <- sub("sig=[^&]*", "sig=WRONG-SIG-11", az$sas_write)
  secrets <- c(az$key, substr(az$key, 1, 24), wrong_key, substr(wrong_key, 1, 24),
               sig(az$sas_read), utils::URLdecode(sig(az$sas_read)), sig(az$sas_write),
               utils::URLdecode(sig(az$sas_write)), "WRONG-SIG-11")
  shown <- character()
  shown <- c(shown, shown_by(st <- az$store("private", "trust")))
  st$create_group("/", "")
  z <- zarr$new(st)
  d <- define_array("float64", c(10, 10))
  d$chunk_shape <- c(5, 5)
  x <- matrix(as.double(1:100), 10)
  shown <- c(shown, shown_by(z$add_array("/", "a", d)$write(x)))
  expect_identical(z[["/a"]][, ], x)
  shown <- c(shown, shown_of(st), shown_of(z), shown_of(z[["/a"]]), shown_by(st$list_prefix("")))
  # SAS stores, read-only and full; failures: a read-only SAS writing, a wrong key, a wrong signature,
  # a missing container, a read-only store
  for (sas in c(az$sas_read, az$sas_write, wrong_sas)) {
    s <- zarr_azurestore$new("private", "trust", endpoint = az$endpoint, sas = sas)
    shown <- c(shown, shown_of(s), shown_by(s$get("a/zarr.json")), shown_by(s$list_prefix("")),
               shown_by(s$set("k", as.raw(1))), shown_by(zarr$new(s)[["/a"]][, ]))
  }
  wrong <- zarr_azurestore$new("private", "trust", endpoint = az$endpoint, account = az$account, key = wrong_key)
  e <- shown_by(wrong$get("a/zarr.json"))
  expect_true(any(grepl("Azure error", e)))
  shown <- c(shown, e, shown_by(wrong$list_prefix("")), shown_by(wrong$set("k", as.raw(1))), shown_of(wrong),
             shown_by(az$store("nosuch")$get("x")), shown_by(az$store("private", read_only = TRUE)$set("k", raw(1))))
  # the environment's credentials, as open_zarr() finds them
  withr::local_envvar(AZURE_STORAGE_CONNECTION_STRING = paste0("AccountName=", az$account, ";AccountKey=", az$key,
                                                               ";BlobEndpoint=", az$endpoint))
  shown <- c(shown, shown_by(z2 <- open_zarr("az://private/trust")), shown_of(z2), shown_of(z2$store),
             shown_by(open_zarr("az://private/none")))
  withr::local_envvar(AZURE_STORAGE_CONNECTION_STRING = paste0("BlobEndpoint=", az$endpoint,
                                                               ";SharedAccessSignature=", az$sas_read))
  shown <- c(shown, shown_by(z3 <- open_zarr("az://private/trust")), shown_of(z3$store),
             shown_by(z3[["/a"]][1, 1] <- 5))
  expect_nothing_secret(shown, secrets, what = "the Azure store")
})
