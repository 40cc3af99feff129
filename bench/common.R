# Shared by bench/run.R (timings), bench/worker.R (peak RSS, one operation per
# fresh R process) and bench/cran.R (the CRAN 'zarr' package).
# Defines the data sets, the fixture stores and the list of operations; each
# operation has a zarr side and a base-R side (writeBin / readBin / seek).

MB <- 1e6  # results are reported in MB = 1e6 bytes

# ---------------------------------------------------------------- paths, libs

bench_root <- function() {
  # directory holding this file's repository (the bench/ parent)
  f <- sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE))
  if (length(f)) return(normalizePath(file.path(dirname(f[1]), ".."), mustWork = TRUE))
  normalizePath(".", mustWork = TRUE)
}

# The library holding *our* zarr: $ZARR_BENCH_LIB, else <repo>/.lib when it
# holds zarr, else "" (whatever library(zarr) finds).
bench_our_lib <- function(root) {
  lib <- Sys.getenv("ZARR_BENCH_LIB", "")
  if (nzchar(lib)) {
    if (!dir.exists(lib)) stop("ZARR_BENCH_LIB='", lib, "' does not exist")
    return(normalizePath(lib))
  }
  dotlib <- file.path(root, ".lib")
  if (file.exists(file.path(dotlib, "zarr", "DESCRIPTION"))) return(normalizePath(dotlib))
  ""
}

is_cran_zarr <- function(desc) {
  identical(desc$Repository, "CRAN") || grepl("Van Laake", desc$Maintainer %||% "", fixed = TRUE)
}

`%||%` <- function(a, b) if (is.null(a)) b else a

load_our_zarr <- function(lib) {
  if (nzchar(lib)) .libPaths(c(lib, .libPaths()))
  if (!requireNamespace("zarr", quietly = TRUE))
    stop("zarr is not installed", if (nzchar(lib)) paste0(" in ", lib) else "",
         ": run bash bench/run.sh (installs it into .lib/), or set ZARR_BENCH_LIB", call. = FALSE)
  suppressPackageStartupMessages(library(zarr))
  desc <- utils::packageDescription("zarr")
  if (is_cran_zarr(desc))
    stop("library(zarr) found the CRAN package (", find.package("zarr"), "), not ours: ",
         "install ours into .lib (bash bench/run.sh) or set ZARR_BENCH_LIB")
  invisible(find.package("zarr"))
}

# ---------------------------------------------------------------- /proc memory

proc_status_kb <- function(field) {
  st <- tryCatch(readLines("/proc/self/status"), error = function(e) character())
  l <- grep(paste0("^", field, ":"), st, value = TRUE)
  if (!length(l)) return(NA_real_)
  as.numeric(sub("^[^0-9]*([0-9]+).*$", "\\1", l[1]))
}

# Reset the peak RSS (VmHWM) to the current RSS (Linux >= 4.0).
reset_hwm <- function() {
  isTRUE(tryCatch({
    cat("5", file = "/proc/self/clear_refs")
    TRUE
  }, error = function(e) FALSE, warning = function(w) FALSE))
}

# ---------------------------------------------------------------- data sets

data_gen <- list(
  # W1: 4000 x 2000 random doubles, 64 MB
  x1 = function() { set.seed(1); matrix(stats::runif(4000 * 2000), 4000L, 2000L) },
  # W3: 256 x 256 x 128 int32, 0 .. n-1
  x3 = function() array(0L:(256L * 256L * 128L - 1L), c(256L, 256L, 128L)),
  # W4: 1e6 random doubles
  x4 = function() { set.seed(4); stats::runif(1e6) },
  # writeBin() wants plain vectors: the same data without dim (made outside
  # the timings; not derived from the cached x1 / x3 so a worker holds one copy)
  x1v = function() { set.seed(1); stats::runif(4000 * 2000) },
  x3v = function() 0L:(256L * 256L * 128L - 1L)
)
bench_data <- new.env()
get_data <- function(name) {
  if (is.null(bench_data[[name]])) bench_data[[name]] <- data_gen[[name]]()
  bench_data[[name]]
}

# W2: 20 unaligned 100 x 100 blocks of the 4000 x 2000 matrix (fixed seed)
w2_blocks <- local({
  set.seed(2)
  ok_i <- setdiff(seq_len(4000L - 99L), seq(1L, 4000L, by = 100L))  # never on a chunk edge
  ok_j <- setdiff(seq_len(2000L - 99L), seq(1L, 2000L, by = 100L))
  data.frame(i = sample(ok_i, 20L), j = sample(ok_j, 20L))
})
W3_K <- 70L            # the 256 x 256 x 1 slice [, , 70]
W3_IJ <- c(100L, 200L) # the 1 x 1 x 128 column [100, 200, ]

# ---------------------------------------------------------------- our zarr

# Definition of a float64 / int32 array with chunks and one compressor
# ("none", "zstd" (level 1), "blosc" (lz4, clevel 5, shuffle) or "blosc_zstd"
# (zstd, clevel 1, shuffle)).
our_def <- function(type, dims, chunks, codec = "zstd") {
  def <- define_array(type, dims)
  def$chunk_shape <- chunks
  def$remove_codec("zstd")  # start from transpose + bytes, whatever the default
  if (codec == "zstd") def$add_codec("zstd", list(level = 1))
  if (codec == "blosc") def$add_codec("blosc", list(cname = "lz4", clevel = 5, shuffle = "shuffle"))
  if (codec == "blosc_zstd") def$add_codec("blosc", list(cname = "zstd", clevel = 1, shuffle = "shuffle"))
  def
}

our_write_def <- function(path, x, def) {
  z <- create_zarr(path)
  arr <- z$add_array("/", "a", def)
  arr$write(x)
  invisible(z)
}

with_threads <- function(n, expr) {
  old <- options(zarr.num_threads = n)
  on.exit(options(old))
  expr
}

# ---------------------------------------------------------------- fixtures

fixture_paths <- function(dir) {
  f <- function(x) file.path(dir, "fixtures", x)
  list(
    w1 = f("w1.zarr"), w1_bin = f("w1.bin"),
    w3 = f("w3.zarr"), w3_bin = f("w3.bin"),
    w4 = f("w4.zarr"), w4_bin = f("w4.bin"),
    w5_none = f("w5_none.zarr"), w5_zstd = f("w5_zstd.zarr"), w5_blosc = f("w5_blosc.zarr"),
    w1_files = f("w1_files"), w4_files = f("w4_files"))
}

make_fixtures <- function(dir) {
  fx <- fixture_paths(dir)
  unlink(file.path(dir, "fixtures"), recursive = TRUE)
  dir.create(file.path(dir, "fixtures"), recursive = TRUE)
  x1 <- get_data("x1"); x3 <- get_data("x3"); x4 <- get_data("x4")
  as_zarr(x1, location = fx$w1)
  writeBin(get_data("x1v"), fx$w1_bin)
  our_write_def(fx$w3, x3, our_def("int32", dim(x3), c(64, 64, 64)))
  writeBin(get_data("x3v"), fx$w3_bin)
  our_write_def(fx$w4, x4, our_def("float64", length(x4), 1000))
  writeBin(x4, fx$w4_bin)
  for (cd in c("none", "zstd", "blosc"))
    our_write_def(fx[[paste0("w5_", cd)]], x1, our_def("float64", dim(x1), c(100, 100), cd))
  base_write_files(fx$w1_files, x1, 100L)
  base_write_files(fx$w4_files, x4, 1000L)
  fx
}

# ---------------------------------------------------------------- base R

base_read_all <- function(file, what, n) {
  con <- file(file, "rb")
  on.exit(close(con))
  readBin(con, what, n)
}

# The file system's share of a chunked store: the same data in one file per
# chunk (uncompressed, flat directory), written / read with writeBin / readBin.
# `x`: a matrix (chunks of cs x cs) or a vector (chunks of cs).
base_write_files <- function(dir, x, cs) {
  dir.create(dir, recursive = TRUE, showWarnings = FALSE)
  if (is.matrix(x)) {
    for (i in seq_len(ceiling(nrow(x) / cs)) - 1L) {
      rows <- (i * cs + 1L):min(nrow(x), (i + 1L) * cs)
      for (j in seq_len(ceiling(ncol(x) / cs)) - 1L) {
        cols <- (j * cs + 1L):min(ncol(x), (j + 1L) * cs)
        writeBin(as.vector(x[rows, cols]), file.path(dir, sprintf("c.%d.%d", i, j)))
      }
    }
  } else {
    for (i in seq_len(ceiling(length(x) / cs)) - 1L)
      writeBin(x[(i * cs + 1L):min(length(x), (i + 1L) * cs)], file.path(dir, sprintf("c.%d", i)))
  }
  invisible(dir)
}
base_read_files <- function(dir, dims, cs) {
  if (length(dims) == 2L) {
    out <- matrix(0, dims[1], dims[2])
    for (i in seq_len(ceiling(dims[1] / cs)) - 1L) {
      rows <- (i * cs + 1L):min(dims[1], (i + 1L) * cs)
      for (j in seq_len(ceiling(dims[2] / cs)) - 1L) {
        cols <- (j * cs + 1L):min(dims[2], (j + 1L) * cs)
        out[rows, cols] <- readBin(file.path(dir, sprintf("c.%d.%d", i, j)), "double",
                                   length(rows) * length(cols))
      }
    }
  } else {
    out <- numeric(dims)
    for (i in seq_len(ceiling(dims / cs)) - 1L) {
      idx <- (i * cs + 1L):min(dims, (i + 1L) * cs)
      out[idx] <- readBin(file.path(dir, sprintf("c.%d", i)), "double", length(idx))
    }
  }
  out
}

# 100 x 100 block of a column-major 4000 x 2000 double file: 100 seeks + reads
base_blocks <- function(con, nrow = 4000L) {
  lapply(seq_len(nrow(w2_blocks)), function(b) {
    i <- w2_blocks$i[b]; j <- w2_blocks$j[b]
    m <- matrix(0, 100L, 100L)
    for (c in 0:99) {
      seek(con, ((j + c - 1) * nrow + (i - 1)) * 8)
      m[, c + 1L] <- readBin(con, "double", 100L)
    }
    m
  })
}

# ---------------------------------------------------------------- operations
#
# Each operation: id, workload, operation (text), baseline (text), kind
# ("write", "read" or "part"), bytes (of the result, or of the input for
# writes), input / base_input (data set the zarr / base write needs: writeBin
# takes a vector without dim), zarr / base: function(out) where
# `out` is a fresh path for writes; open(): optional, makes the handles that
# partial reads use (array, connection), outside the timing; expect():
# the expected value of the read; target: list(max = ratio, text = ...);
# no_rss: TRUE to skip the peak RSS processes (the zarr side is measured elsewhere).

make_ops <- function(fx) {
  n1 <- 4000 * 2000; n3 <- 256 * 256 * 128; n4 <- 1e6
  h <- new.env()  # handles for partial reads
  ops <- list()
  add <- function(...) {
    o <- list(...)
    ops[[o$id]] <<- o
  }
  # ---- W1
  add(id = "w1_write", workload = "W1", operation = "write 4000x2000 f64 (as_zarr)",
      baseline = "writeBin", kind = "write", bytes = 8 * n1, input = "x1", base_input = "x1v",
      zarr = function(out) as_zarr(get_data("x1"), location = out),
      base = function(out) writeBin(get_data("x1v"), out),
      target = list(max = 6, text = "<= 6x writeBin"))
  add(id = "w1_write_files", workload = "W1", operation = "write (as above) vs 1 file/chunk",
      baseline = "writeBin x 800 files", kind = "write", no_rss = TRUE, bytes = 8 * n1, input = "x1", base_input = "x1",
      zarr = function(out) as_zarr(get_data("x1"), location = out),
      base = function(out) base_write_files(out, get_data("x1"), 100L))
  add(id = "w1_read", workload = "W1", operation = "open + read all [,]",
      baseline = "readBin", kind = "read", bytes = 8 * n1,
      zarr = function(out) open_zarr(fx$w1)$root[, ],
      base = function(out) base_read_all(fx$w1_bin, "double", n1),
      expect = function() get_data("x1"),
      target = list(max = 3, text = "<= 3x readBin"))
  add(id = "w1_read_files", workload = "W1", operation = "read (as above) vs 1 file/chunk",
      baseline = "readBin x 800 files", kind = "read", no_rss = TRUE, bytes = 8 * n1,
      zarr = function(out) open_zarr(fx$w1)$root[, ],
      base = function(out) base_read_files(fx$w1_files, c(4000L, 2000L), 100L),
      expect = function() get_data("x1"))
  # ---- W2
  add(id = "w2_blocks", workload = "W2", operation = "20 unaligned 100x100 blocks",
      baseline = "seek+readBin", kind = "part", bytes = 8 * 100 * 100 * 20,
      open = function() {
        h$w1 <- open_zarr(fx$w1)$root
        h$w1_con <- file(fx$w1_bin, "rb")
      },
      close = function() close(h$w1_con),
      zarr = function(out) lapply(seq_len(nrow(w2_blocks)), function(b) {
        i <- w2_blocks$i[b]; j <- w2_blocks$j[b]
        h$w1[i:(i + 99L), j:(j + 99L)]
      }),
      base = function(out) base_blocks(h$w1_con),
      expect = function() {
        x1 <- get_data("x1")
        lapply(seq_len(nrow(w2_blocks)), function(b) {
          i <- w2_blocks$i[b]; j <- w2_blocks$j[b]
          x1[i:(i + 99L), j:(j + 99L)]
        })
      },
      target = list(max = 5, text = "<= 5x seek+readBin"))
  # ---- W3
  add(id = "w3_write", workload = "W3", operation = "write 256^2x128 i32, chunks 64^3",
      baseline = "writeBin", kind = "write", bytes = 4 * n3, input = "x3", base_input = "x3v",
      zarr = function(out) our_write_def(out, get_data("x3"), our_def("int32", c(256, 256, 128), c(64, 64, 64))),
      base = function(out) writeBin(get_data("x3v"), out))
  add(id = "w3_read", workload = "W3", operation = "open + read all [,,]",
      baseline = "readBin", kind = "read", bytes = 4 * n3,
      zarr = function(out) open_zarr(fx$w3)$get_node("/a")[, , ],
      base = function(out) base_read_all(fx$w3_bin, "integer", n3),
      expect = function() get_data("x3"),
      target = list(max = 3, text = "<= 3x readBin"))
  add(id = "w3_slice", workload = "W3", operation = sprintf("slice [, , %d] (256x256x1)", W3_K),
      baseline = "seek+readBin", kind = "part", bytes = 4 * 256 * 256,
      open = function() {
        h$w3 <- open_zarr(fx$w3)$get_node("/a")
        h$w3_con <- file(fx$w3_bin, "rb")
      },
      close = function() close(h$w3_con),
      zarr = function(out) h$w3[, , W3_K],
      base = function(out) {
        seek(h$w3_con, (W3_K - 1) * 256 * 256 * 4)
        readBin(h$w3_con, "integer", 256L * 256L)
      },
      expect = function() get_data("x3")[, , W3_K])
  add(id = "w3_column", workload = "W3", operation = sprintf("column [%d, %d, ] (1x1x128)", W3_IJ[1], W3_IJ[2]),
      baseline = "128 x (seek+readBin)", kind = "part", bytes = 4 * 128,
      open = function() {
        h$w3c <- open_zarr(fx$w3)$get_node("/a")
        h$w3c_con <- file(fx$w3_bin, "rb")
      },
      close = function() close(h$w3c_con),
      zarr = function(out) h$w3c[W3_IJ[1], W3_IJ[2], ],
      base = function(out) {
        off <- (W3_IJ[1] - 1) + (W3_IJ[2] - 1) * 256
        vapply(0:127, function(k) {
          seek(h$w3c_con, (off + k * 65536) * 4)
          readBin(h$w3c_con, "integer", 1L)
        }, 1L)
      },
      expect = function() get_data("x3")[W3_IJ[1], W3_IJ[2], ])
  # ---- W4
  add(id = "w4_write", workload = "W4", operation = "write 1e6 f64, chunks 1000",
      baseline = "writeBin", kind = "write", bytes = 8 * n4, input = "x4", base_input = "x4",
      zarr = function(out) our_write_def(out, get_data("x4"), our_def("float64", 1e6, 1000)),
      base = function(out) writeBin(get_data("x4"), out))
  add(id = "w4_write_files", workload = "W4", operation = "write (as above) vs 1 file/chunk",
      baseline = "writeBin x 1000 files", kind = "write", no_rss = TRUE, bytes = 8 * n4, input = "x4", base_input = "x4",
      zarr = function(out) our_write_def(out, get_data("x4"), our_def("float64", 1e6, 1000)),
      base = function(out) base_write_files(out, get_data("x4"), 1000L))
  add(id = "w4_read", workload = "W4", operation = "open + read all $read()",
      baseline = "readBin", kind = "read", bytes = 8 * n4,
      zarr = function(out) open_zarr(fx$w4)$get_node("/a")$read(),
      base = function(out) base_read_all(fx$w4_bin, "double", n4),
      expect = function() get_data("x4"),
      target = list(max = 20, text = "<= 20x readBin"))
  add(id = "w4_read_files", workload = "W4", operation = "read (as above) vs 1 file/chunk",
      baseline = "readBin x 1000 files", kind = "read", no_rss = TRUE, bytes = 8 * n4,
      zarr = function(out) open_zarr(fx$w4)$get_node("/a")$read(),
      base = function(out) base_read_files(fx$w4_files, 1e6, 1000L),
      expect = function() get_data("x4"))
  # ---- W5: threads (zstd) and codecs (default threads)
  for (nt in 1:2) {
    add(id = sprintf("w5_write_t%d", nt), workload = "W5",
        operation = sprintf("W1 write zstd-1, %d thread%s", nt, if (nt > 1) "s" else ""),
        baseline = "writeBin", kind = "write", bytes = 8 * n1, input = "x1", base_input = "x1v", threads = nt,
        zarr = local({ k <- nt; function(out) with_threads(k,
          our_write_def(out, get_data("x1"), our_def("float64", c(4000, 2000), c(100, 100), "zstd"))) }),
        base = function(out) writeBin(get_data("x1v"), out))
    add(id = sprintf("w5_read_t%d", nt), workload = "W5",
        operation = sprintf("W1 read zstd-1, %d thread%s", nt, if (nt > 1) "s" else ""),
        baseline = "readBin", kind = "read", bytes = 8 * n1, threads = nt,
        zarr = local({ k <- nt; function(out) with_threads(k, open_zarr(fx$w5_zstd)$get_node("/a")[, ]) }),
        base = function(out) base_read_all(fx$w1_bin, "double", n1),
        expect = function() get_data("x1"))
  }
  for (cd in c("none", "zstd", "blosc")) {
    lab <- c(none = "uncompressed", zstd = "zstd-1", blosc = "blosc-lz4")[[cd]]
    add(id = paste0("w5_write_", cd), workload = "W5", operation = paste("W1 write", lab),
        baseline = "writeBin", kind = "write", bytes = 8 * n1, input = "x1", base_input = "x1v",
        zarr = local({ k <- cd; function(out)
          our_write_def(out, get_data("x1"), our_def("float64", c(4000, 2000), c(100, 100), k)) }),
        base = function(out) writeBin(get_data("x1v"), out))
    add(id = paste0("w5_read_", cd), workload = "W5", operation = paste("W1 read", lab),
        baseline = "readBin", kind = "read", bytes = 8 * n1,
        zarr = local({ p <- fx[[paste0("w5_", cd)]]; function(out) open_zarr(p)$get_node("/a")[, ] }),
        base = function(out) base_read_all(fx$w1_bin, "double", n1),
        expect = function() get_data("x1"),
        target = if (cd == "none") list(max = 1.5, text = "<= 1.5x readBin") else NULL)
  }
  ops
}

# Compare a read result with the expected value: same values and the same
# dim, up to dimensions of extent 1 (R's drop); dimnames are ignored.
same_values <- function(got, want) {
  if (is.list(want)) {
    return(is.list(got) && length(got) == length(want) &&
             all(mapply(same_values, got, want)))
  }
  dd <- function(x) { d <- dim(x); if (is.null(d)) length(x) else as.integer(d[d != 1L]) }
  if (!identical(dd(got), dd(want))) return(FALSE)
  identical(as.vector(got), as.vector(want))
}

# The project's HTTP test server (tools/testserver/server.js) serving `dir`
# on a free port of 127.0.0.1: list(process, url, control), control("stats")
# etc. querying it; process is NULL (and `why` says why) when it did not start.
start_test_server <- function(dir, root = bench_root()) {
  Sys.setenv(no_proxy = "127.0.0.1,localhost", NO_PROXY = "127.0.0.1,localhost")
  srv <- processx::process$new("node", c(file.path(root, "tools", "testserver", "server.js"), "--root", dir,
                                         "--port", "0"), stdin = "|", stdout = "|", stderr = "|", cleanup = TRUE)
  port <- NA_integer_
  out <- ""
  deadline <- Sys.time() + 20
  while (is.na(port) && srv$is_alive() && Sys.time() < deadline) {
    srv$poll_io(200)
    out <- paste0(out, srv$read_output())
    m <- regmatches(out, regexec("(^|\n)listening ([0-9]+)\n", out))[[1]]
    if (length(m)) port <- as.integer(m[3])
  }
  if (is.na(port)) return(list(process = NULL, why = paste(out, srv$read_all_error())))
  url <- sprintf("http://127.0.0.1:%d", port)
  control <- function(what) {
    con <- url(paste0(url, "/_", what), open = "rb")
    on.exit(close(con))
    jsonlite::fromJSON(paste(readLines(con, warn = FALSE), collapse = ""), simplifyVector = FALSE)
  }
  list(process = srv, url = url, control = control)
}

# One line of output, formatted as sprintf() does.
say <- function(...) cat(sprintf(...), "\n", sep = "")

# The load averages of the machine (1, 5 and 15 minutes), NA where unknown.
loadavg <- function() tryCatch(paste(strsplit(readLines("/proc/loadavg"), " ")[[1]][1:3], collapse = " "),
                               error = function(e) NA_character_)
