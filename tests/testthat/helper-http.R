# A real HTTP server for the tests: tools/testserver/server.js (Node.js, no
# npm packages) serving a directory on 127.0.0.1, with fault profiles
# (latency, failures, truncated bodies, bad ranges, hangs, 404s: see the
# comment at the top of server.js) and request statistics.
#
#   srv <- http_server(root)        # skips when node/processx are missing
#   srv$url                         # "http://127.0.0.1:<port>"
#   srv$url_of("a b/store.zarr", profile = "latency=20,fail=3")
#   srv$stats()                     # requests, bytes, connections, methods, log
#   srv$reset()                     # clears the statistics and fault counters
#   srv$default("redirect=...")     # a profile for requests without one (S3 paths)
# The server stops when the calling frame ends (withr::defer), and by itself
# when this R process dies (it exits when its stdin closes).

# Where server.js is: $ZARR_TESTSERVER, tools/testserver next to
# $ZARR_INTEROP_DIR (tools/test.sh sets both), or the source tree seen from
# tests/testthat.
testserver_script <- function() {
  interop <- Sys.getenv("ZARR_INTEROP_DIR", "")
  cands <- c(Sys.getenv("ZARR_TESTSERVER", ""),
             if (nzchar(interop)) file.path(dirname(interop), "testserver", "server.js"),
             "../../tools/testserver/server.js", "../../../tools/testserver/server.js")
  for (f in cands) if (nzchar(f) && file.exists(f)) return(normalizePath(f))
  ""
}

# Skip (fail under CI: ZARR_REQUIRE_INTEROP=true) without node, processx or
# the server script.
skip_without_http_server <- function() {
  require_or_skip(nzchar(Sys.which("node")), "node (for the HTTP test server)")
  require_or_skip(requireNamespace("processx", quietly = TRUE), "the processx package (for the HTTP test server)")
  require_or_skip(nzchar(testserver_script()), "tools/testserver/server.js")
}

# GET a control endpoint of the server with R's own client (not the package).
http_control <- function(url) {
  con <- url(url, open = "rb")
  on.exit(close(con))
  txt <- paste(readLines(con, warn = FALSE, encoding = "UTF-8"), collapse = "\n")
  jsonlite::fromJSON(txt, simplifyVector = TRUE)
}

# The server's statistics: requests, bytes, connections (numbers), methods (a
# named numeric vector, e.g. c(GET = 12)) and log, a data frame with one row
# per request: method, path (percent-decoded, with the fault profile),
# query, range (NA without a Range header), status (0: never answered),
# bytes (body bytes sent), time (ms since the server started), fault (NA or
# "fail", "truncate", "badrange", "hang", "notfound").
http_stats <- function(url) {
  s <- http_control(paste0(url, "/_stats"))
  m <- unlist(s$methods)
  s$methods <- if (is.null(m)) stats::setNames(numeric(), character()) else m
  log <- s$log
  if (!is.data.frame(log)) log <- data.frame(method = character(), path = character(), query = character(),
                                             range = character(), status = numeric(), bytes = numeric(),
                                             time = numeric())
  if (is.null(log$fault)) log$fault <- rep(NA_character_, nrow(log))
  if (!is.character(log$range)) log$range <- as.character(log$range)
  s$log <- log
  s
}

# Percent-encode each segment of a path ("a b/c[1].zarr" -> "a%20b/c%5B1%5D.zarr").
url_path <- function(path) {
  segs <- strsplit(enc2utf8(path), "/", fixed = TRUE)[[1]]
  paste(vapply(segs, utils::URLencode, "", reserved = TRUE), collapse = "/")
}

# Start a server for `root`; it stops when the frame `env` ends.
http_server <- function(root, env = parent.frame()) {
  skip_without_http_server()
  root <- normalizePath(root, mustWork = TRUE)
  p <- processx::process$new("node", c(testserver_script(), "--root", root, "--port", "0"),
                             stdin = "|", stdout = "|", stderr = "|", cleanup = TRUE)
  withr::defer(if (p$is_alive()) p$kill(), envir = env)
  # the server is on 127.0.0.1: never through a proxy
  withr::local_envvar(c(no_proxy = "127.0.0.1,localhost", NO_PROXY = "127.0.0.1,localhost"),
                      .local_envir = env)
  port <- NA_integer_
  out <- ""
  deadline <- Sys.time() + 20
  while (is.na(port) && p$is_alive() && Sys.time() < deadline) {
    p$poll_io(200)
    out <- paste0(out, p$read_output())
    m <- regmatches(out, regexec("(^|\n)listening ([0-9]+)\n", out))[[1]]
    if (length(m)) port <- as.integer(m[3])
  }
  if (is.na(port)) {
    if (p$is_alive()) p$kill()
    err <- tryCatch(p$read_all_error(), error = function(e) "")
    require_or_skip(FALSE, sprintf("the HTTP test server (it did not start: %s)",
                                   substr(paste(out, err), 1, 500)))
  }
  url <- sprintf("http://127.0.0.1:%d", port)
  list(
    url = url, port = port, root = root, process = p,
    # the URL of `path` below root, optionally under a fault profile
    url_of = function(path = "", profile = NULL) {
      paste0(url, if (!is.null(profile)) paste0("/", profile), if (nzchar(path)) paste0("/", url_path(path)))
    },
    stats = function() http_stats(url),
    reset = function() invisible(http_control(paste0(url, "/_reset"))),
    # the fault profile of requests whose path has none (NULL: none)
    default = function(profile = NULL) invisible(http_control(paste0(url, "/_default?", profile %||% ""))),
    stop = function() if (p$is_alive()) p$kill()
  )
}
local_http_server <- http_server

# Options that keep failing requests fast in tests.
local_fast_retries <- function(retries = 2L, env = parent.frame()) {
  withr::local_options(list(zarr.http_retries = retries, zarr.http_backoff = 0.001,
                            zarr.http_backoff_max = 0.01), .local_envir = env)
}
