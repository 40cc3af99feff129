# A real S3-compatible server for the tests: s3rver (npm, installed in
# tools/s3server/node_modules by tools/setup.sh) behind
# tools/s3server/proxy.js, which checks Signature Version 4 signatures the way
# S3 does (s3rver checks none) and refuses unsigned requests to private
# buckets. All on 127.0.0.1.
#
#   s3 <- s3_server()      # skips (fails under CI) without node/s3rver/processx
#   s3$endpoint            # "http://127.0.0.1:<port>"
#   s3$key, s3$secret      # credentials the proxy accepts
#   s3$store("private", "prefix")   # a zarr_s3store with those credentials
#   s3$stats(); s3$reset()          # requests seen by the proxy
#   s3$indent(TRUE)                 # XML answers indented from now on (FALSE: compact)
# Buckets: "private" and "private2" need credentials; "public" may be read
# anonymously. The server stops when the calling frame ends.

s3server_script <- function() {
  interop <- Sys.getenv("ZARR_INTEROP_DIR", "")
  cands <- c(Sys.getenv("ZARR_S3SERVER", ""),
             if (nzchar(interop)) file.path(dirname(interop), "s3server", "proxy.js"),
             "../../tools/s3server/proxy.js", "../../../tools/s3server/proxy.js")
  for (f in cands) if (nzchar(f) && file.exists(f)) return(normalizePath(f))
  ""
}

skip_without_s3_server <- function() {
  require_or_skip(nzchar(Sys.which("node")), "node (for the S3 test server)")
  require_or_skip(requireNamespace("processx", quietly = TRUE), "the processx package (for the S3 test server)")
  script <- s3server_script()
  require_or_skip(nzchar(script), "tools/s3server/proxy.js")
  require_or_skip(dir.exists(file.path(dirname(script), "node_modules", "s3rver")),
                  "s3rver in tools/s3server/node_modules (tools/setup.sh installs it)")
}

s3_server <- function(env = parent.frame(), key = "AKIDZARRTEST", secret = "zarr/Test+Secret0123",
                      token_key = "ASIAZARRTEMP", token_secret = "tempSecret", token = "zarr-session-token") {
  skip_without_s3_server()
  dir <- withr::local_tempdir(.local_envir = env)
  script <- s3server_script()
  # s3rver's continuation tokens use DES, which OpenSSL 3 keeps in its legacy provider
  p <- processx::process$new("node", c("--openssl-legacy-provider", script, "--dir", dir, "--port", "0",
                                       "--cred", paste0(key, ":", secret),
                                       "--cred", paste0(token_key, ":", token_secret, ":", token),
                                       "--private", "private,private2", "--public", "public"),
                             stdin = "|", stdout = "|", stderr = "|", cleanup = TRUE)
  withr::defer(if (p$is_alive()) p$kill(), envir = env)
  withr::local_envvar(c(no_proxy = "127.0.0.1,localhost", NO_PROXY = "127.0.0.1,localhost"), .local_envir = env)
  # the tests choose their credentials themselves: nothing from this machine
  withr::local_envvar(c(AWS_ACCESS_KEY_ID = NA, AWS_SECRET_ACCESS_KEY = NA, AWS_SESSION_TOKEN = NA,
                        AWS_PROFILE = NA, AWS_DEFAULT_PROFILE = NA, AWS_REGION = NA, AWS_DEFAULT_REGION = NA,
                        AWS_ENDPOINT_URL = NA, AWS_ENDPOINT_URL_S3 = NA,
                        AWS_SHARED_CREDENTIALS_FILE = file.path(dir, "no-credentials"),
                        AWS_CONFIG_FILE = file.path(dir, "no-config")), .local_envir = env)
  port <- NA_integer_
  out <- ""
  deadline <- Sys.time() + 30
  while (is.na(port) && p$is_alive() && Sys.time() < deadline) {
    p$poll_io(200)
    out <- paste0(out, p$read_output())
    m <- regmatches(out, regexec("(^|\n)LISTENING ([0-9]+)\n", out))[[1]]
    if (length(m)) port <- as.integer(m[3])
  }
  if (is.na(port)) {
    if (p$is_alive()) p$kill()
    err <- tryCatch(p$read_all_error(), error = function(e) "")
    require_or_skip(FALSE, sprintf("the S3 test server (it did not start: %s)", substr(paste(out, err), 1, 500)))
  }
  endpoint <- sprintf("http://127.0.0.1:%d", port)
  control <- function(what) {
    con <- url(paste0(endpoint, "/_proxy/", what), open = "rb")
    on.exit(close(con))
    jsonlite::fromJSON(paste(readLines(con, warn = FALSE), collapse = "\n"), simplifyVector = TRUE)
  }
  list(
    endpoint = endpoint, port = port, key = key, secret = secret, dir = dir, process = p,
    token_key = token_key, token_secret = token_secret, token = token,
    store = function(bucket = "private", prefix = "", ...) {
      zarr_s3store$new(bucket, prefix, endpoint = endpoint, access_key = key, secret_key = secret, ...)
    },
    stats = function() control("stats"),
    reset = function() invisible(control("reset")),
    indent = function(on = TRUE) invisible(control(if (on) "indent" else "compact"))
  )
}

# Copy a local directory store into an S3 store, key by key.
s3_upload_dir <- function(store, dir) {
  files <- list.files(dir, recursive = TRUE, all.files = TRUE)
  for (f in files) store$set(f, readBin(file.path(dir, f), "raw", file.size(file.path(dir, f))))
  invisible(files)
}

# Options that keep failing requests fast in tests.
local_s3_fast <- function(env = parent.frame()) {
  withr::local_options(list(zarr.http_retries = 1L, zarr.http_backoff = 0.001, zarr.http_backoff_max = 0.01),
                       .local_envir = env)
}
