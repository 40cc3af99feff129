# W1 and W4 with the CRAN 'zarr' package, in its own R process (started by
# bench/run.R), from the library bench/lib only (bench/setup-cran-zarr.R).
# Each operation runs once (the package is slow), timed with proc.time(); the
# peak RSS above the RSS before the operation is taken from /proc.
#
# usage: Rscript bench/cran.R <work dir> <output .rds>

args <- commandArgs(TRUE)
if (length(args) != 2L) stop("usage: cran.R <work dir> <output .rds>")
dir <- args[1]; out_rds <- args[2]

here <- dirname(sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE)[1]))
source(file.path(here, "common.R"))  # also defines `%||%`, which R < 4.4 lacks
root <- bench_root()
cran_lib <- normalizePath(file.path(root, "bench", "lib"), mustWork = TRUE)
.libPaths(c(cran_lib, .libPaths()))
suppressPackageStartupMessages(library(zarr))
desc <- utils::packageDescription("zarr")
if (!is_cran_zarr(desc) || !startsWith(find.package("zarr"), cran_lib))
  stop("bench/lib does not hold the CRAN zarr package (found ", find.package("zarr"), ")")

x1 <- get_data("x1"); x4 <- get_data("x4")
wd <- file.path(dir, "cran")
unlink(wd, recursive = TRUE); dir.create(wd, recursive = TRUE)
p1 <- file.path(wd, "w1.zarr"); p4 <- file.path(wd, "w4.zarr")

ops <- list(
  w1_write = function() as_zarr(x1, location = p1),
  w1_read = function() open_zarr(p1)$root[, ],
  w4_write = function() {
    z <- create_zarr(p4)
    def <- define_array("float64", 1e6)
    def$chunk_shape <- 1000L
    z$add_array("/", "a", def)$write(x4)
  },
  w4_read = function() open_zarr(p4)[["/a"]]$read()
)
expect <- list(w1_read = x1, w4_read = x4)

rows <- list()
for (id in names(ops)) {
  invisible(gc(full = TRUE))
  pre <- proc_status_kb("VmRSS")
  reset_ok <- reset_hwm()
  t0 <- proc.time()
  res <- tryCatch(ops[[id]](), error = function(e) e)
  d <- proc.time() - t0
  hwm <- proc_status_kb("VmHWM")
  err <- if (inherits(res, "error")) conditionMessage(res) else NA_character_
  valid <- if (!is.na(err)) FALSE else if (id %in% names(expect)) same_values(res, expect[[id]]) else NA
  rows[[id]] <- data.frame(id = id, elapsed = d[["elapsed"]],
                           cpu = d[["user.self"]] + d[["sys.self"]],
                           rss_mb = if (reset_ok) (hwm - pre) * 1024 / MB else NA_real_,
                           valid = valid, error = err)
  rm(res)
  cat(sprintf("cran: %-8s %7.2f s  cpu %7.2f s  %s\n", id, d[["elapsed"]],
              d[["user.self"]] + d[["sys.self"]], if (is.na(err)) "" else err))
}
res <- do.call(rbind, rows)
attr(res, "version") <- desc$Version
attr(res, "note") <- gsub("\\s+", " ", desc$BenchNote %||% "")
# the codecs CRAN's as_zarr chose, for the table notes
meta <- tryCatch(jsonlite::fromJSON(file.path(p1, "zarr.json")), error = function(e) NULL)
attr(res, "w1_codecs") <- if (is.null(meta)) "" else {
  cd <- meta$codecs
  paste(vapply(seq_len(nrow(cd)), function(i) {
    conf <- cd$configuration[i, , drop = FALSE]
    extra <- if (cd$name[i] == "blosc") sprintf("(%s-%s, %s)", conf$cname, conf$clevel, conf$shuffle) else ""
    paste0(cd$name[i], extra)
  }, ""), collapse = "+")
}
attr(res, "w1_chunks") <- if (is.null(meta)) "" else paste(meta$chunk_grid$configuration$chunk_shape, collapse = "x")
saveRDS(res, out_rds)
unlink(wd, recursive = TRUE)
