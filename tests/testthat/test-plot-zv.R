# Quick-look plots of Zarr Vectors stores (R/plot.R): what is read (the
# level, the chunks of the box) and where the points land in a PNG; the
# slice an array of 3+ dimensions needs; the level of a pyramid chosen from
# the device's size; the progress bar of a plot's read.

# Evaluate `expr` with a null device open (a plot without one would open
# Rplots.pdf in the working directory).
on_null_device <- function(expr) {
  grDevices::pdf(NULL)
  on.exit(grDevices::dev.off())
  expr
}

# Non-white pixels of a PNG.
inked <- function(img) img[, , 1] < 0.9 | img[, , 2] < 0.9 | img[, , 3] < 0.9

# Pixels mostly red: lines are anti-aliased, so a line of width 1 between
# two pixel rows is pink on both.
reddish <- function(img) img[, , 1] > 0.9 & img[, , 2] < 0.75 & img[, , 3] < 0.75

# A store of n random points (x and y in 0..100 unless given, z in 0..10) in
# chunks of 25 x 25 x 10, removed when the test ends.
zv_cloud <- function(n, seed, x = c(0, 100), y = c(0, 100), ..., env = parent.frame()) {
  set.seed(seed)
  xyz <- cbind(runif(n, x[1L], x[2L]), runif(n, y[1L], y[2L]), runif(n, 0, 10))
  path <- tempfile(fileext = ".zarr")
  withr::defer(unlink(path, recursive = TRUE), envir = env)
  write_zarr_vectors(path, xyz, chunk_shape = c(25, 25, 10), ...)
  list(xyz = xyz, path = path)
}

# A PNG of plot(zv, ...) without margins, axes or labels, on a square device.
zv_png <- function(zv, ..., px = 200) {
  render_png(function() plot(zv, ..., axes = FALSE, main = "", sub = "", xlab = "", ylab = "", legend = FALSE,
                             pch = 15, cex = 0.5),
             px = px, margins = FALSE)
}

test_that("a cloud in one quadrant lands in that quadrant of the picture; the box sets the limits", {
  n <- 3000
  # every point in x 5..45, y 55..95: the top-left quadrant of 0..100
  cl <- zv_cloud(n, 3, x = c(5, 45), y = c(55, 95))
  xyz <- cl$xyz
  zv <- open_zarr(cl$path, read_only = TRUE)$root
  img <- zv_png(zv, box = list(x = c(0, 100), y = c(0, 100)), col = blue, level = 0)
  ink <- inked(img)
  expect_gt(sum(ink), 2000)
  # rows from the top, columns from the left: all in the first 100 of each
  expect_lt(max(row(ink)[ink]), 100)
  expect_lt(max(col(ink)[ink]), 100)
  expect_gt(min(row(ink)[ink]), 1)
  expect_gt(min(col(ink)[ink]), 1)
  expect_true(all(is_colour(img, c(0, 0, 255))[ink] | !is_colour(img, c(255, 255, 255))[ink]))
  # without a box, the limits are the store's bounds: the cloud fills the picture
  ink2 <- inked(zv_png(zv, col = blue, level = 0))
  expect_gt(mean(col(ink2)[ink2] > 100), 0.3)
  expect_gt(mean(row(ink2)[ink2] > 100), 0.3)
  # projected on x and z: z (0..10) along the rows, x along the columns
  p <- zarr:::plot_zv_points(zv, list(x = c(0, 100)), c("x", "z"), 0, 1e5, NULL)
  expect_identical(p$dims, c("x", "z"))
  expect_equal(p$lim[[1L]], c(0, 100))
  expect_equal(p$lim[[2L]], range(xyz[, 3]), tolerance = 1e-6) # the bounds, as float32
  expect_equal(nrow(p$vertices), n)
})

test_that("a box reads the chunks it touches only; the level is the coarsest with enough points", {
  n <- 4000
  path <- zv_cloud(n, 4, attributes = data.frame(i = seq_len(n)))$path
  # requests of a plot, on a store opened afresh (nothing cached)
  requests <- function(...) {
    zv <- open_zarr(path, read_only = TRUE)$root
    st <- zv$store
    zarr_clear_cache(st)
    r0 <- st$io_stats()[["requests"]]
    grDevices::pdf(NULL)
    on.exit(grDevices::dev.off())
    plot(zv, ...)
    st$io_stats()[["requests"]] - r0
  }
  # 16 chunks of level 0, each a vertex blob and an attribute blob (metadata
  # and chunk): 64 requests; a box inside one chunk: 4
  whole <- requests(level = 0)
  expect_identical(whole, 64)
  expect_identical(requests(level = 0, box = list(x = c(1, 20), y = c(1, 20))), 4)
  expect_lt(requests(box = list(x = c(1, 20), y = c(1, 20)), max_points = 1000), whole)
  zv <- open_zarr(path, read_only = TRUE)$root
  lv <- zv$levels
  n1 <- lv$vertex_count[2L]
  expect_lt(n1, n)
  level_for <- function(m, box = NULL) zarr:::plot_zv_points(zv, box, NULL, NULL, m, NULL)$level
  expect_identical(level_for(n1), 1L)
  expect_identical(level_for(n1 + 1), 0L)
  expect_identical(level_for(10), 1L)
  expect_identical(level_for(1e5), 0L) # none has as many: the finest
  # in a box of one chunk of 16, level 1 holds about n1 / 16 points
  expect_identical(level_for(floor(n1 / 16), list(x = c(1, 20), y = c(1, 20))), 1L)
  expect_identical(level_for(floor(n1 / 16) + 1, list(x = c(1, 20), y = c(1, 20))), 0L)
  # at most max_points drawn: every k-th of those read
  p <- zarr:::plot_zv_points(zv, NULL, NULL, 0, 1000, NULL)
  expect_identical(nrow(p$vertices), as.integer(n))
  expect_lte(length(p$shown), 1000)
  expect_gte(length(p$shown), 800)
  # the device decides max_points: a quarter of its pixels (here 40 x 40 / 4)
  skip_if_not_installed("png")
  f <- tempfile(fileext = ".png")
  grDevices::png(f, width = 40, height = 40)
  m <- zarr:::plot_max_points(NULL)
  grDevices::dev.off()
  unlink(f)
  expect_identical(m, 400)
  # the level group plots as the store at that level
  expect_identical(zv_png(zv[["1"]], col = blue), zv_png(zv, level = 1, col = blue))
  expect_false(identical(zv_png(zv, level = 0, col = blue), zv_png(zv, level = 1, col = blue)))
})

test_that("points coloured by an attribute: categories and numbers, each colour where its points are", {
  set.seed(5)
  n <- 2000
  xyz <- cbind(runif(n, 0, 100), runif(n, 0, 100))
  side <- factor(ifelse(xyz[, 1] < 50, "left", "right"))
  path <- tempfile(fileext = ".zarr")
  withr::defer(unlink(path, recursive = TRUE))
  zv <- write_zarr_vectors(path, xyz, chunk_shape = c(50, 50),
                           attributes = data.frame(side = side, value = xyz[, 1], flag = xyz[, 2] > 50))
  check_sides <- function(img) {
    is_red <- is_colour(img, c(255, 0, 0))
    is_blue <- is_colour(img, c(0, 0, 255))
    expect_gt(sum(is_red), 500)
    expect_equal(sum(is_red), sum(is_blue), tolerance = 0.2)
    expect_lt(max(col(is_red)[is_red]), min(col(is_blue)[is_blue]) + 3) # the points' size across the border
    expect_lt(mean(col(is_red)[is_red]), 100)
    expect_gt(mean(col(is_blue)[is_blue]), 100)
  }
  check_sides(zv_png(zv, level = 0, colour = "side", col = c(red, blue)))
  check_sides(zv_png(zv, level = 0, colour = "value", col = c(red, blue), zlim = c(0, 100)))
  check_sides(zv_png(zv, level = 0, colour = "x", col = c(red, blue), zlim = c(0, 100)))
  # a logical: FALSE (the bottom half) red
  img <- zv_png(zv, level = 0, colour = "flag", col = c(red, blue))
  is_red <- is_colour(img, c(255, 0, 0))
  expect_gt(mean(row(is_red)[is_red]), 100)
  # with the legend: the colour bar and the category key in the right margin
  img <- render_png(function() plot(zv, level = 0, colour = "side", col = c(red, blue), axes = FALSE), px = 300)
  # (the plot region, square, ends before column 200)
  right <- col(img[, , 1]) > 200
  expect_gt(sum(reddish(img) & right), 0)
  expect_gt(sum(is_colour(img, c(0, 0, 255)) & right), 0)
  expect_error(on_null_device(plot(zv, colour = "nope")), class = "zarr_error_argument")
  expect_error(on_null_device(plot(zv, box = list(w = c(0, 1)))), class = "zarr_error_argument")
  expect_error(on_null_device(plot(zv, box = list(x = c(2, 1)))), class = "zarr_error_argument")
  expect_error(on_null_device(plot(zv, dims = c("x", "x"))), class = "zarr_error_argument")
  expect_error(on_null_device(plot(zv, level = 5)), class = "zarr_error_argument")
  expect_error(on_null_device(plot(zv, max_points = 0)), class = "zarr_error_argument")
})

test_that("a graph's lines and a mesh's triangle outlines are drawn; the axes carry the positions' units", {
  # two vertices far apart, linked: the line crosses the middle of the picture
  xy <- rbind(c(10, 50), c(90, 50), c(50, 10))
  path <- tempfile(fileext = ".zarr")
  withr::defer(unlink(path, recursive = TRUE))
  zv <- write_zarr_vectors(path, xy, chunk_shape = c(50, 50), links = matrix(1:2, 1), levels = 1)
  img <- zv_png(zv, box = list(x = c(0, 100), y = c(0, 100)), col = blue, link_col = red)
  is_red <- reddish(img)
  expect_gt(sum(is_red[95:105, 60:140]), 60) # across the middle, between the two points
  expect_identical(sum(is_red[1:80, ]), 0L)
  img <- zv_png(zv, box = list(x = c(0, 100), y = c(0, 100)), col = blue, link_col = red, links = FALSE)
  expect_identical(sum(reddish(img)), 0L)
  # a triangle: its three edges
  path2 <- tempfile(fileext = ".zarr")
  withr::defer(unlink(path2, recursive = TRUE))
  tri <- write_zarr_vectors(path2, xy, chunk_shape = c(50, 50), links = matrix(1:3, 1), levels = 1)
  img <- zv_png(tri, box = list(x = c(0, 100), y = c(0, 100)), col = blue, link_col = red)
  is_red <- reddish(img)
  expect_gt(sum(is_red[95:105, 60:140]), 60)          # the edge 1-2 along y = 50
  expect_gt(sum(is_red[105:180, ]), 100)              # the edges down to vertex 3 (y = 10)
  expect_identical(sum(is_red[1:80, ]), 0L)
  # units from the store's axes
  ms <- zv$attributes$multiscales
  ms[[1L]]$axes[[1L]]$unit <- "micrometer"
  ms[[1L]]$axes[[2L]]$unit <- "micrometer"
  zv$set_attribute("multiscales", ms)
  zv <- open_zarr(path, read_only = TRUE)$root
  p <- zarr:::plot_zv_points(zv, NULL, NULL, NULL, 100, NULL)
  expect_identical(p$unit, c("micrometer", "micrometer"))
  # the link joins the rows of (10, 50) and (90, 50), in the order read
  ends <- p$vertices[as.vector(p$links), c("x", "y")]
  expect_equal(unname(as.matrix(ends)), xy[1:2, ])
})

test_that("a plot's long read shows the progress bar of reads", {
  skip_if_not_installed("cli")
  zv <- open_zarr(zv_cloud(4000, 6)$path, read_only = TRUE)$root
  withr::local_options(zarr.progress = TRUE, zarr.progress_min_bytes = 0, zarr.progress_after = 0,
                       zarr.num_threads = 1, cli.dynamic = FALSE, cli.progress_show_after = 0)
  st <- zarr:::progress_state
  before <- st$reports
  grDevices::pdf(NULL)
  out <- capture.output(plot(zv, level = 0), type = "message")
  grDevices::dev.off()
  expect_gt(st$reports, before)
  expect_false(st$active)
  bar <- grep("Reading / level 0", out, fixed = TRUE, value = TRUE)
  expect_gte(length(bar), 1L)
  expect_true(all(grepl("[0-9]+/[0-9]+ ", bar)))
  # and the strided read of an array's plot
  z <- create_zarr()
  d <- define_array("float64", c(200, 200))
  d$chunk_shape <- c(10, 10)
  a <- z$add_array("/", "a", d)
  withr::with_options(list(zarr.progress = FALSE), a$write(matrix(runif(200 * 200), 200)))
  before <- st$reports
  grDevices::pdf(NULL)
  out <- capture.output(plot(a, max_pixels = 200), type = "message")
  grDevices::dev.off()
  expect_gt(st$reports, before)
  expect_true(any(grepl("Reading /a", out, fixed = TRUE)))
})

test_that("an array of 3+ dimensions without slice: a classed error naming what to pass", {
  z <- create_zarr()
  b <- define_array("float64", c(3, 4, 5))
  b$dimension_names <- c("time", "y", "x")
  v <- z$root$add_array("v", b)
  v$write(array(as.numeric(seq_len(60)), c(3, 4, 5)))
  err <- expect_error(as.raster(v), class = "zarr_error_argument")
  expect_match(conditionMessage(err), "v has 3 dimensions", fixed = TRUE)
  expect_match(conditionMessage(err), "time (1 to 3)", fixed = TRUE)
  expect_match(conditionMessage(err), "slice = list(time = 1)", fixed = TRUE)
  expect_error(on_null_device(plot(v)), class = "zarr_error_argument")
  expect_error(on_null_device(plot(zarr_dataset(z))), class = "zarr_error_argument")
  # a selection that holds several time steps too; one time step plots
  expect_error(as.raster(v$isel(time = 1:2)), class = "zarr_error_argument")
  expect_identical(dim(as.raster(v$isel(time = 2))), c(4L, 5L))
  expect_identical(as.raster(v, slice = list(time = 2)), as.raster(v$isel(time = 2)))
  # an extent of 1 needs no slice
  b1 <- define_array("float64", c(1, 4, 5))
  w <- z$root$add_array("w", b1)
  w$write(array(1, c(1, 4, 5)))
  expect_identical(dim(as.raster(w)), c(4L, 5L))
  # without dimension names: an index per other dimension, in order
  u <- z$root$add_array("u", define_array("float64", c(2, 3, 4, 5)))
  err <- expect_error(as.raster(u), class = "zarr_error_argument")
  expect_match(conditionMessage(err), "slice = c(1, 1)", fixed = TRUE)
  expect_identical(dim(as.raster(u, slice = c(1, 2))), c(4L, 5L))
})

test_that("OME-NGFF images and multiscales groups read the coarsest level with the device's pixels", {
  skip_if_not_installed("png")
  x <- array(runif(64 * 48), c(64, 48))
  path <- tempfile(fileext = ".zarr")
  withr::defer(unlink(path, recursive = TRUE))
  # levels of 64 x 48, 32 x 24, 16 x 12 pixels in chunks of 16 x 16: 12, 4 and 1 chunks
  write_ome_ngff(x, path, levels = 3, axes = c("y", "x"), chunk_shape = c(16, 16))
  chunk_requests <- function(px) {
    img <- open_zarr(path, read_only = TRUE)$root
    st <- img$store
    zarr_clear_cache(st) # the chunks an earlier plot read are cached by location
    n <- 0
    render_png(function() {
      r0 <- st$io_stats()[["requests"]]
      plot(img, legend = FALSE, axes = FALSE, main = "", sub = "", xlab = "", ylab = "")
      n <<- st$io_stats()[["requests"]] - r0
    }, px = px, margins = FALSE)
    n
  }
  # a device of 16 pixels: level 3 (16 along y); 20 and 32: level 2 (32); 33 and 64: level 1
  n16 <- chunk_requests(16)
  n20 <- chunk_requests(20)
  n64 <- chunk_requests(64)
  expect_lt(n16, n20)
  expect_lt(n20, n64)
  expect_identical(n20 - n16, 3) # 4 chunks instead of 1: the metadata read is the same
  expect_identical(n64 - n16, 11)
  expect_identical(chunk_requests(32), n20)
  expect_identical(chunk_requests(33), n64)
  # a multiscales group: from the device too
  z <- multiscales_group()
  cols <- c(red, blue)
  draw <- function(x) function() plot(x, col = cols, legend = FALSE, axes = FALSE, main = "", sub = "", xlab = "",
                                      ylab = "")
  # 20 pixels: level "1" (20 x 20), drawn whole
  expect_identical(render_png(draw(z$root), px = 20, margins = FALSE),
                   render_png(draw(z$root[["1"]]), px = 20, margins = FALSE))
  expect_identical(render_png(draw(z$root), px = 10, margins = FALSE),
                   render_png(draw(z$root[["2"]]), px = 10, margins = FALSE))
})
