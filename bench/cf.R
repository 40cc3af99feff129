# Decoded reads of a CF variable (issue 17): a packed int16 temperature
# (scale_factor, add_offset, _FillValue; time x lat x lon = 10 x 1000 x 2000,
# 20M values) read whole and decoded to doubles, by this package from a Zarr
# v2 store laid out as xarray writes it, by stars::read_ncdf() from the same
# data as netCDF-4, and by terra through GDAL's Zarr driver from the same
# Zarr store; then a selection by coordinate values with the chunks it read.
# Peers are timed in the same run, interleaved; ratios, not absolute times,
# are the result.
#
# usage: Rscript bench/cf.R   (from the repository root; needs ncdf4; stars
#   with ncmeta and terra are optional rows)
# ZARR_BENCH_LIB: library with our zarr (default .lib/); ZARR_BENCH_DIR:
# where the stores go (default a temporary directory); ZARR_BENCH_REPS:
# timed repetitions after a warm-up (default 5). Writes
# bench/results/cf.csv.

root <- local({
  f <- sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE))
  if (length(f)) normalizePath(file.path(dirname(f[1]), "..")) else normalizePath(".")
})
lib <- Sys.getenv("ZARR_BENCH_LIB", file.path(root, ".lib"))
if (dir.exists(lib)) .libPaths(c(normalizePath(lib), .libPaths()))
suppressPackageStartupMessages(library(zarr))
if (!requireNamespace("ncdf4", quietly = TRUE)) stop("bench/cf.R needs the ncdf4 package")
options(zarr.progress = FALSE)
reps <- as.integer(Sys.getenv("ZARR_BENCH_REPS", "5"))
work <- Sys.getenv("ZARR_BENCH_DIR", tempdir())
zpath <- file.path(work, sprintf("cf-%d.zarr", Sys.getpid()))
ncpath <- file.path(work, sprintf("cf-%d.nc", Sys.getpid()))
on.exit(unlink(c(zpath, ncpath), recursive = TRUE), add = TRUE)

nt <- 10L; nlat <- 1000L; nlon <- 2000L
lat <- seq(89.91, by = -0.18, length.out = nlat)
lon <- seq(-179.91, by = 0.18, length.out = nlon)
time <- as.Date("2020-01-01") + 0:(nt - 1L)
set.seed(17)
temp <- array(250 + 50 * runif(nt * nlat * nlon), c(nt, nlat, nlon)) # Zarr order: time, lat, lon
temp[sample(length(temp), 1000)] <- NA
scale <- 0.01; offset <- 275

# Zarr v2 as xarray writes it: chunks 1 x 500 x 500, zstd-1, consolidated
old <- options(zarr.format = 2L)
z <- create_zarr(zpath)
add <- function(name, dtype, values, dims, attrs, chunks = NULL) {
  b <- define_array(dtype, dim(values) %||% length(values))
  b$dimension_names <- dims
  if (!is.null(chunks)) b$chunk_shape <- chunks
  if (!is.null(attrs[["_FillValue"]])) b$fill_value <- attrs[["_FillValue"]]
  a <- z$root$add_array(name, b)
  for (k in names(attrs)) a$set_attribute(k, attrs[[k]])
  a$write(values) # encoded: packed, times to days
}
# coordinates in one chunk each, as xarray writes them
add("time", "int32", time, "time", list(units = "days since 2020-01-01", calendar = "proleptic_gregorian"), nt)
add("lat", "float64", lat, "lat", list(units = "degrees_north", standard_name = "latitude"), nlat)
add("lon", "float64", lon, "lon", list(units = "degrees_east", standard_name = "longitude"), nlon)
add("temp", "int16", temp, c("time", "lat", "lon"),
    list(scale_factor = scale, add_offset = offset, `_FillValue` = -32767L, units = "K"), chunks = c(1, 500, 500))
zarr_consolidate(z)
options(old)

# the same data as netCDF-4 (zlib level 1, chunks 500 x 500 x 1: the same chunks)
dl <- list(ncdf4::ncdim_def("lon", "degrees_east", lon), ncdf4::ncdim_def("lat", "degrees_north", lat),
           ncdf4::ncdim_def("time", "days since 2020-01-01", 0:(nt - 1L), unlim = FALSE))
v <- ncdf4::ncvar_def("temp", "K", dl, missval = -32767, prec = "short", compression = 1, chunksizes = c(500, 500, 1))
nc <- ncdf4::nc_create(ncpath, v, force_v4 = TRUE)
ncdf4::ncatt_put(nc, "temp", "scale_factor", scale, prec = "double")
ncdf4::ncatt_put(nc, "temp", "add_offset", offset, prec = "double")
ncdf4::ncvar_put(nc, "temp", round((aperm(temp, 3:1) - offset) / scale))
ncdf4::nc_close(nc)

# ---- the readers (each returns the decoded values, time x lat x lon)
ours <- function() open_zarr(zpath, read_only = TRUE)$root[["temp"]][]
ours_raw <- function() open_zarr(zpath, read_only = TRUE)$root[["temp"]][decode = FALSE]
peers <- list()
if (requireNamespace("stars", quietly = TRUE) && requireNamespace("ncmeta", quietly = TRUE))
  peers$stars_read_ncdf <- function() {
    s <- suppressWarnings(suppressMessages(stars::read_ncdf(ncpath, var = "temp", proxy = FALSE)))
    aperm(units::drop_units(s[[1]]), 3:1)
  }
if (requireNamespace("terra", quietly = TRUE) && "Zarr" %in% terra::gdal(drivers = TRUE)$name)
  peers$terra_gdal_zarr <- function() {
    # GDAL 3.6's Zarr driver opens a 3-d array one 2-d slice at a time
    r <- terra::rast(sprintf('ZARR:"%s":/temp:%d', zpath, 0:(nt - 1L)))
    # rows are lat (north first, as stored), columns lon, layers time
    aperm(array(terra::values(r), c(nlon, nlat, nt)), 3:1)
  }

# check that every reader decodes the same values
want <- round((temp - offset) / scale) * scale + offset
stopifnot(isTRUE(all.equal(ours(), want)))
for (p in names(peers)) {
  got <- peers[[p]]()
  if (!isTRUE(all.equal(unname(got), want, tolerance = 1e-6))) stop(p, " does not read the same values")
}

timed <- function(f) {
  gc()
  system.time(f())[["elapsed"]]
}
fs <- c(list(zarr_decoded = ours, zarr_raw = ours_raw), peers)
invisible(lapply(fs, function(f) f())) # warm-up
times <- matrix(NA_real_, reps, length(fs), dimnames = list(NULL, names(fs)))
for (r in seq_len(reps)) for (p in names(fs)) times[r, p] <- timed(fs[[p]])
med <- apply(times, 2, stats::median)

# selection by coordinate values: a 10 x 10 degree box on two days
a <- open_zarr(zpath, read_only = TRUE)$root[["temp"]]
st <- a$store
before <- st$io_stats()
t_sel <- system.time(s <- a$sel(lat = c(40, 50), lon = c(0, 10), time = c("2020-01-03", "2020-01-04")))[["elapsed"]]
used <- st$io_stats() - before
res <- data.frame(
  id = c("cf_read_decoded", "cf_read_raw", paste0("cf_read_vs_", names(peers)), "cf_sel_box"),
  what = c("zarr: temp[] decoded (20M int16 -> double)", "zarr: temp[decode = FALSE] (int16)",
           sprintf("zarr decoded vs %s", names(peers)),
           sprintf("zarr: sel(lat 40..50, lon 0..10, 2 days) -> %s values", format(length(s$values)))),
  zarr_s = c(med[["zarr_decoded"]], med[["zarr_raw"]], rep(med[["zarr_decoded"]], length(peers)), t_sel),
  peer_s = c(NA, NA, med[names(peers)], NA),
  stringsAsFactors = FALSE)
res$ratio <- res$zarr_s / res$peer_s
res$target <- ifelse(grepl("_vs_", res$id), ifelse(res$ratio <= 0.5, "<= 0.5: met", "<= 0.5: MISSED"), "")
# chunks of temp under the box: lat 40..50 in rows 222..278 (one chunk of
# 500), lon 0..10 in columns 1001..1056 (one chunk), 2 days: 2 chunks; plus
# one read of each coordinate array
res$requests <- c(NA, NA, rep(NA, length(peers)), used[["requests"]])
cat(sprintf("packed int16 %d x %d x %d (%.0f MB decoded), chunks 1 x 500 x 500; %d reps, median seconds\n",
            nt, nlat, nlon, nt * nlat * nlon * 8 / 1e6, reps))
print(format(res, digits = 3), row.names = FALSE)
cat(sprintf("selection: %d requests (2 chunks of temp + one per coordinate array expected: 5)\n", used[["requests"]]))
cat(sprintf("load average at the end: %s\n", paste(readLines("/proc/loadavg", warn = FALSE), collapse = "")))
dir.create(file.path(root, "bench", "results"), showWarnings = FALSE, recursive = TRUE)
utils::write.csv(res, file.path(root, "bench", "results", "cf.csv"), row.names = FALSE)
