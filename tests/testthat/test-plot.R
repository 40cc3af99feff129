# Quick-look plots (R/plot.R): plot(), image() and as.raster() of arrays,
# selections, datasets, OME-NGFF images and multiscales groups, checked on
# the pixels they give (as.raster(), and PNG files read back with png).

# render_png(), is_colour(), red and blue: helper-plot.R

test_that("as.raster() of a matrix: x along the columns, the first row on top, NA for NA", {
  m <- matrix(0, 40, 60)
  m[, 31:60] <- 1
  m[1:5, ] <- NA
  a <- as_zarr(m)[["/"]]
  r <- as.raster(a, col = c(red, blue))
  expect_identical(as.raster(as_zarr(m), col = c(red, blue)), r) # a zarr object: its root
  expect_s3_class(r, "raster")
  expect_identical(dim(r), c(40L, 60L))
  r <- as.matrix(r)
  expect_true(all(is.na(r[1:5, ])))
  expect_true(all(r[6:40, 1:30] == red))
  expect_true(all(r[6:40, 31:60] == blue))
  # a gradient along x: one colour per column, in the order of the values
  g <- as_zarr(matrix(rep(1:60, each = 10), 10))[["/"]]
  cols <- grDevices::hcl.colors(60)
  r <- as.matrix(as.raster(g, col = cols))
  expect_identical(r[1, ], cols)
  expect_identical(r[10, ], cols)
  # zlim: values outside take the colour of the nearest end
  r <- as.matrix(as.raster(g, col = c(red, blue), zlim = c(20, 40)))
  expect_true(all(r[, 1:29] == red))
  expect_true(all(r[, 31:60] == blue))
  # xy: y along the columns instead
  r <- as.raster(a, col = c(red, blue), xy = c(1, 2))
  expect_identical(dim(r), c(60L, 40L))
  expect_error(as.raster(a, xy = c(1, 1)), class = "zarr_error_argument")
  expect_error(as.raster(as_zarr(1:5)[["/"]]), class = "zarr_error_value")
  expect_error(as.raster(as_zarr(matrix(integer(), 0, 3))[["/"]]), class = "zarr_error_value")
  expect_error(as.raster(as_zarr(matrix(letters[1:4], 2))[["/"]]), class = "zarr_error_value")
  expect_error(as.raster(a, max_pixels = 0), class = "zarr_error_argument")
  expect_error(as.raster(a, zlim = c(2, 1)), class = "zarr_error_argument")
})

test_that("plot() draws the colours in proportion; NA pixels show the background; the colour bar is in the margin", {
  m <- matrix(0, 40, 40)
  m[, 21:40] <- 1
  m[1:20, ] <- NA # the top half
  a <- as_zarr(m)[["/"]]
  img <- render_png(function() plot(a, col = c(red, blue), legend = FALSE, axes = FALSE, main = "",
                                     xlab = "", ylab = "", sub = ""), margins = FALSE)
  expect_identical(dim(img)[1:2], c(200L, 200L))
  is_red <- is_colour(img, c(255, 0, 0))
  is_blue <- is_colour(img, c(0, 0, 255))
  is_white <- is_colour(img, c(255, 255, 255))
  expect_equal(mean(is_red), 0.25, tolerance = 0.02)
  expect_equal(mean(is_blue), 0.25, tolerance = 0.02)
  expect_equal(mean(is_white), 0.5, tolerance = 0.02)
  # NA (the first rows) on top, red left of blue
  expect_true(all(is_white[1:95, ]))
  expect_true(max(col(is_red)[is_red]) < min(col(is_blue)[is_blue]))
  expect_true(min(row(is_red)[is_red]) > 95)

  # with the colour bar: both colours right of the plot region too
  img <- render_png(function() plot(a, col = c(red, blue), axes = FALSE, main = "", xlab = "", ylab = "", sub = ""),
                    px = 300)
  is_red <- colSums(is_colour(img, c(255, 0, 0))) > 0
  is_blue <- colSums(is_colour(img, c(0, 0, 255))) > 0
  # a column of the image has one colour, a column of the bar both
  bar <- is_red & is_blue
  expect_true(any(bar))
  expect_gt(min(which(bar)), max(which(is_blue & !bar)))
})

test_that("the strided read reads fewer chunks than a full read, sized to the device or to max_pixels", {
  m <- matrix(as.numeric(seq_len(200 * 200)), 200)
  path <- tempfile(fileext = ".zarr")
  withr::defer(unlink(path, recursive = TRUE))
  d <- define_array("float64", dim(m))
  d$chunk_shape <- c(5, 5) # 1600 chunks
  z <- create_zarr(path)
  z$add_array("/", "a", d)$write(m)
  a <- open_zarr(path, read_only = TRUE)[["/a"]]
  st <- a$store
  requests <- function(expr) {
    r0 <- st$io_stats()[["requests"]]
    force(expr)
    st$io_stats()[["requests"]] - r0
  }
  full <- requests(a[])
  expect_equal(full, 1600)
  # every 10th element (a chunk of 5 in two skipped): 20 x 20 chunks
  cols <- grDevices::hcl.colors(64)
  r <- NULL
  expect_equal(requests(r <- as.raster(a, max_pixels = 20, col = cols)), 400)
  expect_identical(dim(r), c(20L, 20L))
  # the elements read: 5, 15, ..., 195 along each dimension
  idx <- seq(5, 195, by = 10)
  want <- m[idx, idx]
  lvl <- floor((want - min(want)) / diff(range(want)) * 64) + 1
  lvl[lvl > 64] <- 64
  expect_identical(as.vector(as.matrix(r)), cols[as.vector(lvl)])
  # plot(): as many elements as the device has pixels (here 20)
  skip_if_not_installed("png")
  n <- 0
  zarr_clear_cache(st) # the chunks as.raster() read may be cached
  render_png(function() n <<- requests(plot(a, legend = FALSE, axes = FALSE, main = "", sub = "", xlab = "", ylab = "")),
             px = 20, margins = FALSE)
  expect_equal(n, 400)
})

test_that("CF-decoded values, coordinate axes (y up), slices of other dimensions and the title", {
  z <- create_zarr()
  for (dn in c("lat", "lon", "time")) {
    b <- define_array("float64", c(lat = 3, lon = 4, time = 2)[[dn]])
    b$dimension_names <- dn
    z$root$add_array(dn, b)$write(switch(dn, lat = c(10, 20, 30), lon = c(0, 1, 2, 3), time = c(0, 1)))
  }
  z$root[["time"]]$set_attribute("units", "days since 2000-01-01")
  b <- define_array("int16", c(2, 3, 4))
  b$dimension_names <- c("time", "lat", "lon")
  v <- z$root$add_array("t2m", b)
  raw <- array(0L, c(2, 3, 4))
  raw[2, , 3:4] <- 10L      # 5 after decoding
  raw[2, 1, 1] <- -999L     # _FillValue: NA
  v$write(raw)
  v$set_attributes(list(scale_factor = 0.5, `_FillValue` = -999L, long_name = "air temperature", units = "K"))
  r <- as.matrix(as.raster(v, slice = list(time = 2), col = c(red, blue), zlim = c(0, 5)))
  expect_identical(dim(r), c(3L, 4L))
  # latitudes grow upwards: the last row of the array (lat 30) on top, the
  # first one (lat 10, with the missing value) at the bottom
  expect_true(is.na(r[3, 1]))
  expect_identical(r[3, -1], c(red, blue, blue))
  expect_identical(r[1, ], c(red, red, blue, blue))
  # the first time step: all zero
  expect_true(all(as.raster(v, slice = list(time = 1), col = c(red, blue), zlim = c(0, 5)) == red))
  expect_error(as.raster(v, slice = list(time = 3)), class = "zarr_error_argument")
  expect_error(as.raster(v, slice = list(lat = 1)), class = "zarr_error_argument")
  # what is drawn: coordinates, labels, title with the slice
  d <- zarr:::plot_read_array(v, list(time = 2), NULL, 1000, TRUE)
  p <- zarr:::plot_plane(d, d$xy)
  expect_identical(p$x$at, c(0, 1, 2, 3))
  expect_identical(p$y$at, c(10, 20, 30))
  expect_identical(c(p$xlab, p$ylab), c("lon", "lat"))
  expect_identical(p$main, "t2m: air temperature [K]")
  expect_identical(p$sub, "time = 2000-01-02")
  expect_false(p$top_down)
  # the same from the dataset, and plotted
  ds <- zarr_dataset(z)
  expect_identical(as.raster(ds, slice = list(time = 2), col = c(red, blue), zlim = c(0, 5)),
                   as.raster(v, slice = list(time = 2), col = c(red, blue), zlim = c(0, 5)))
  img <- render_png(function() plot(ds, slice = c(2)))
  expect_identical(dim(img)[1:2], c(200L, 200L))
})

test_that("drop = TRUE in sel(), isel(), a dataset's sel() and read_region(); FALSE keeps today's shapes", {
  z <- create_zarr()
  b <- define_array("float64", 3)
  b$dimension_names <- "time"
  z$root$add_array("time", b)$write(c(0, 1, 2))
  z$root[["time"]]$set_attribute("units", "days since 2000-01-01")
  b <- define_array("float64", c(3, 4, 5))
  b$dimension_names <- c("time", "y", "x")
  x <- array(as.numeric(seq_len(60)), c(3, 4, 5))
  v <- z$root$add_array("v", b)
  v$write(x)
  kept <- v$sel(time = "2000-01-02")
  expect_identical(dim(kept$values), c(1L, 4L, 5L))
  expect_identical(kept$dims, c("time", "y", "x"))
  s <- v$sel(time = "2000-01-02", drop = TRUE)
  expect_identical(s$values, x[2, , ])
  expect_identical(s$dims, c("y", "x"))
  expect_identical(s$index, list(y = 1:4 + 0, x = 1:5 + 0))
  expect_identical(s$dropped, list(time = as.Date("2000-01-02")))
  expect_output(print(s), "Dropped: time = 2000-01-02")
  expect_identical(nrow(as.data.frame(s)), 20L)
  expect_identical(v$isel(time = 3, y = 2, drop = TRUE)$values, array(x[3, 2, ], 5))
  expect_error(v$sel(time = "2000-01-02", drop = NA), class = "zarr_error_argument")
  ds <- zarr_dataset(z)
  expect_identical(ds$sel(time = "2000-01-03", drop = TRUE)$v$values, x[3, , ])
  expect_identical(dim(ds$sel(time = "2000-01-03")$v$values), c(1L, 4L, 5L))
  # image() of a one-time-step selection
  r <- as.matrix(as.raster(s, col = grDevices::hcl.colors(64)))
  expect_identical(dim(r), c(4L, 5L))
  expect_identical(r, as.matrix(as.raster(v, slice = list(time = 2), col = grDevices::hcl.colors(64))))
  expect_identical(as.matrix(as.raster(kept)), r)
  img <- render_png(function() image(s))
  expect_identical(dim(img)[1:2], c(200L, 200L))
  expect_true(is.matrix(s$values)) # for graphics::image() too

  # read_region()
  path <- tempfile(fileext = ".zarr")
  withr::defer(unlink(path, recursive = TRUE))
  im <- write_ome_ngff(array(as.numeric(seq_len(2 * 8 * 6)), c(2, 8, 6)), path, levels = 1, axes = c("c", "y", "x"))
  full <- im$read_region(1, c = 2)
  expect_identical(dim(full), c(1L, 8L, 6L))
  reg <- im$read_region(1, c = 2, drop = TRUE)
  expect_identical(dim(reg), c(8L, 6L))
  expect_identical(names(dimnames(reg)), c("y", "x"))
  expect_identical(names(attr(reg, "coordinates")), c("y", "x"))
  expect_identical(as.vector(reg), as.vector(full))
  line <- im$read_region(1, c = 1, y = 0, drop = TRUE)
  expect_identical(dim(line), 6L)
  expect_identical(names(attr(line, "coordinates")), "x")
})

test_that("OME-NGFF images: the channel by number or label, the level chosen for the pixels", {
  # channel 1: top half 0, bottom half 1; channel 2: left half 0, right half 1
  x <- array(0, c(2, 64, 48))
  x[1, 33:64, ] <- 1
  x[2, , 25:48] <- 1
  path <- tempfile(fileext = ".zarr")
  withr::defer(unlink(path, recursive = TRUE))
  img <- write_ome_ngff(x, path, levels = 3, axes = c("c", "y", "x"), channels = c("DNA", "actin"),
                        chunk_shape = c(1, 16, 16))
  r1 <- as.matrix(as.raster(img, channel = 1, level = 1, col = c(red, blue)))
  expect_identical(dim(r1), c(64L, 48L))
  expect_true(all(r1[1:32, ] == red) && all(r1[33:64, ] == blue))
  r2 <- as.matrix(as.raster(img, channel = 2, level = 1, col = c(red, blue)))
  expect_true(all(r2[, 1:24] == red) && all(r2[, 25:48] == blue))
  expect_identical(as.matrix(as.raster(img, channel = "actin", level = 1, col = c(red, blue))), r2)
  expect_identical(as.matrix(as.raster(img, level = 1, col = c(red, blue))), r1) # channel 1 by default
  expect_error(as.raster(img, channel = 3), class = "zarr_error_argument")
  expect_error(as.raster(img, channel = "nothing"), class = "zarr_error_argument")
  # the coarsest level with at least 32 pixels along x or y: level 2 (32 x 24)
  p <- zarr:::plot_ome_plane(img, 2, NULL, NULL, 32)
  expect_identical(dim(p$z), c(24L, 32L))
  expect_identical(p$sub, "level 2 of 3")
  expect_identical(p$main, "image: channel 2 (actin)")
  expect_identical(p$x$at, seq(0, 46, by = 2)) # physical coordinates of the level
  expect_identical(zarr:::plot_ome_plane(img, 2, NULL, NULL, 1000)$sub, "level 1 of 3")
  expect_identical(zarr:::plot_ome_plane(img, 2, NULL, NULL, 5)$sub, "level 3 of 3")
  # fewer chunks for a small picture: level 3 is one chunk per channel
  r3 <- as.raster(img, channel = 2, max_pixels = 16, col = c(red, blue))
  expect_identical(dim(r3), c(16L, 12L))
  expect_identical(as.matrix(r3), r2[seq(1, 64, by = 4), seq(1, 48, by = 4)])
  # a level plots as its image at that level
  expect_identical(as.raster(img$level(2), channel = 2, col = c(red, blue)),
                   as.raster(img, channel = 2, level = 2, col = c(red, blue)))
  png_img <- render_png(function() plot(img, channel = "actin", col = c(red, blue), legend = FALSE, axes = FALSE,
                                        main = "", sub = "", xlab = "", ylab = ""), margins = FALSE)
  is_red <- is_colour(png_img, c(255, 0, 0))
  is_blue <- is_colour(png_img, c(0, 0, 255))
  expect_equal(sum(is_red), sum(is_blue), tolerance = 0.05)
  expect_true(max(col(is_red)[is_red]) < min(col(is_blue)[is_blue]))
})

test_that("a multiscales group (the multiscales convention's layout) plots its coarsest level with enough pixels", {
  z <- multiscales_group()
  g <- z$root
  cols <- grDevices::hcl.colors(64)
  expect_identical(dim(as.raster(g, max_pixels = 20)), c(20L, 20L))
  expect_identical(as.raster(g, max_pixels = 20, col = cols), as.raster(z$root[["1"]], col = cols))
  expect_identical(as.raster(g, max_pixels = 5, col = cols), as.raster(z$root[["2"]], max_pixels = 5, col = cols))
  expect_identical(as.raster(g, level = 1, max_pixels = 40, col = cols), as.raster(z$root[["0"]], col = cols))
  expect_error(as.raster(g, level = 4), class = "zarr_error_argument")
  expect_error(as.raster(create_zarr()$root), class = "zarr_error_value")
  # reopened, the OME-NGFF domain takes the group (it has `multiscales`) but
  # finds no image: it plots as a multiscales group all the same
  path <- tempfile(fileext = ".zarr")
  withr::defer(unlink(path, recursive = TRUE))
  z$save_to(path)
  g2 <- open_zarr(path, read_only = TRUE)$root
  expect_identical(as.raster(g2, max_pixels = 20, col = cols), as.raster(z$root[["1"]], col = cols))
})

test_that("a long plot shows the progress bar of reads", {
  skip_if_not_installed("cli")
  z <- create_zarr(tempfile(fileext = ".zarr"))
  d <- define_array("float64", c(400, 400))
  d$chunk_shape <- c(20, 20)
  a <- z$add_array("/", "a", d)
  a$write(matrix(runif(400 * 400), 400))
  withr::local_options(zarr.progress = TRUE, zarr.progress_min_bytes = 0, zarr.progress_after = 0)
  st <- zarr:::progress_state
  before <- st$reports
  r <- as.raster(a, max_pixels = 400)
  expect_identical(dim(r), c(400L, 400L))
  expect_true(st$reports > before || zarr_options("num_threads") == 1L)
  expect_false(st$active)
})

test_that("a dataset xarray wrote (packed, with a fill value, latitudes from north to south) plots as xarray decodes it", {
  skip_on_cran()
  skip_without_xarray()
  dir <- withr::local_tempdir()
  py <- run_python(c(
    "import sys, json, numpy as np, xarray as xr",
    "p = sys.argv[1] + '/t.zarr'",
    "lat = np.arange(60, -61, -10, dtype='float64')",
    "lon = np.arange(0, 360, 10, dtype='float64')",
    "t = 250 + np.arange(2 * 13 * 36, dtype='float64').reshape(2, 13, 36) / 20",
    "t[1, 0, 0:3] = np.nan",
    "ds = xr.Dataset({'t': (('time', 'lat', 'lon'), t, {'long_name': 'air temperature', 'units': 'K'})},",
    "                coords={'time': np.array(['2020-01-01', '2020-01-02'], dtype='datetime64[ns]'), 'lat': lat, 'lon': lon})",
    "enc = {'t': {'dtype': 'int16', 'scale_factor': 0.05, 'add_offset': 270.0, '_FillValue': -32767}}",
    "ds.to_zarr(p, mode='w', encoding=enc)",
    "v = xr.open_zarr(p).t.isel(time=1).values",
    "out = lambda a: [[None if np.isnan(x) else float(x) for x in row] for row in a]",
    "print(json.dumps({'full': out(v), 'strided': out(v[1::3, 3::8])}))"
  ), dir)
  as_matrix <- function(rows) do.call(rbind, lapply(rows, function(r) vapply(r, function(x) x %||% NA_real_, 0)))
  full <- as_matrix(py$full)
  strided <- as_matrix(py$strided)
  ds <- zarr_dataset(open_zarr(file.path(dir, "t.zarr"), read_only = TRUE))
  cols <- grDevices::hcl.colors(8)
  # bins whose ends lie between the values (multiples of 0.05 from 270):
  # xarray decodes in float32, this package in double
  lo <- round(min(full, na.rm = TRUE) / 0.05) * 0.05 - 0.0125
  zlim <- c(lo, lo + 8 * 0.05 * ceiling(diff(range(full, na.rm = TRUE)) / 0.4 + 1))
  expected <- function(v) {
    i <- floor((v - zlim[1]) / diff(zlim) * 8) + 1
    i[!is.na(i) & i > 8] <- 8
    matrix(cols[i], nrow(v))
  }
  # rows: latitudes from north (top) to south, as xarray holds them here
  r <- as.matrix(as.raster(ds, slice = list(time = 2), col = cols, zlim = zlim))
  expect_identical(dim(r), c(13L, 36L))
  expect_identical(r, expected(full))
  expect_true(all(is.na(r[1, 1:3])))
  r <- as.matrix(as.raster(ds, slice = list(time = 2), col = cols, zlim = zlim, max_pixels = 5))
  expect_identical(r, expected(strided))
  d <- zarr:::plot_read_array(ds[["t"]], list(time = 2), NULL, 1000, TRUE)
  p <- zarr:::plot_plane(d, d$xy)
  expect_identical(p$main, "t: air temperature [K]")
  expect_identical(p$sub, "time = 2020-01-02")
  expect_identical(p$y$at, seq(-60, 60, by = 10))
  img <- render_png(function() plot(ds, slice = list(time = 2)), px = 300)
  expect_identical(dim(img)[1:2], c(300L, 300L))
})

test_that("an OME-NGFF 0.4 image zarr-python wrote: a z plane by its coordinate, a channel, the omero window", {
  skip_on_cran()
  skip_without_python_zarr()
  path <- withr::local_tempfile(fileext = ".zarr")
  py <- run_python(c(
    "import zarr, numpy as np",
    "root = zarr.open_group(sys.argv[1], mode='w')",
    "d = (np.arange(2 * 4 * 20 * 30) % 997).astype('uint16').reshape(2, 4, 20, 30)",
    "root.create_dataset('0', data=d, chunks=(1, 1, 10, 10))",
    "root.create_dataset('1', data=d[:, :, ::2, ::2], chunks=(1, 1, 10, 10))",
    "axes = [{'name': 'c', 'type': 'channel'}, {'name': 'z', 'type': 'space', 'unit': 'micrometer'},",
    "        {'name': 'y', 'type': 'space', 'unit': 'micrometer'}, {'name': 'x', 'type': 'space', 'unit': 'micrometer'}]",
    "ds = [{'path': str(k), 'coordinateTransformations': [{'type': 'scale', 'scale': [1.0, 0.5, 2.0 ** k, 2.0 ** k]},",
    "      {'type': 'translation', 'translation': [0.0, 1.0, 0.0, 0.0]}]} for k in range(2)]",
    "root.attrs['multiscales'] = [{'version': '0.4', 'name': 'cells', 'axes': axes, 'datasets': ds}]",
    "root.attrs['omero'] = {'channels': [{'label': 'DAPI', 'window': {'start': 0, 'end': 500}},",
    "                                    {'label': 'GFP', 'window': {'start': 100, 'end': 900}}]}",
    "print(json.dumps({'plane': zarr.open_group(sys.argv[1])['0'][1, 2].tolist()}))"
  ), path)
  plane <- do.call(rbind, lapply(py$plane, function(r) as.numeric(unlist(r))))
  img <- open_zarr(path, read_only = TRUE)$root
  cols <- grDevices::hcl.colors(16)
  # z = 2 micrometres: (2 - 1) / 0.5 = pixel 2 from 0, the third plane
  r <- as.matrix(as.raster(img, channel = "GFP", slice = list(z = 2), level = 1, col = cols))
  expect_identical(dim(r), c(20L, 30L))
  # the colour range is GFP's window, 100 to 900
  i <- pmin(pmax(floor((plane - 100) / 800 * 16) + 1, 1), 16)
  expect_identical(r, matrix(cols[i], 20))
  expect_identical(r, as.matrix(as.raster(img, channel = 2, slice = list(z = 2), level = 1, col = cols)))
  p <- zarr:::plot_ome_plane(img, "GFP", 1, list(z = 2), 1000)
  expect_identical(p$main, "cells: channel 2 (GFP)")
  expect_identical(p$sub, "level 1 of 2, z = 2")
  expect_identical(p$xlab, "x (micrometer)")
  expect_error(as.raster(img, slice = list(c = 1)), class = "zarr_error_argument")
  # a coordinate past the end: the nearest plane, as read_region() takes it
  expect_identical(as.raster(img, slice = list(z = 100), level = 1), as.raster(img, slice = list(z = 2.5), level = 1))
})
