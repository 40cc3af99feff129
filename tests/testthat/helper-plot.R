# Rendering plots to PNG files and reading their pixels back (test-plot*.R).

red <- "#FF0000"
blue <- "#0000FF"

# A PNG of `draw()` (a square device of `px` pixels, no margins): an array
# of rows x columns x RGB(A) with values in 0..1.
render_png <- function(draw, px = 200, margins = TRUE) {
  skip_if_not_installed("png")
  f <- tempfile(fileext = ".png")
  withr::defer(unlink(f))
  grDevices::png(f, width = px, height = px, bg = "white")
  ok <- FALSE
  on.exit(if (!ok) grDevices::dev.off())
  if (!margins) graphics::par(mar = c(0, 0, 0, 0))
  draw()
  grDevices::dev.off()
  ok <- TRUE
  png::readPNG(f)
}

# Pixels of a PNG equal to a colour (RGB in 0..255).
is_colour <- function(img, rgb) {
  abs(img[, , 1] * 255 - rgb[1]) < 1 & abs(img[, , 2] * 255 - rgb[2]) < 1 & abs(img[, , 3] * 255 - rgb[3]) < 1
}

# A group of the multiscales convention in memory: levels "0", "1", "2" of a
# 40 x 40 matrix of 1..1600, every 2^k-th element of it; the zarr object.
multiscales_group <- function() {
  z <- create_zarr()
  m <- matrix(as.numeric(seq_len(40 * 40)), 40)
  for (k in 0:2) {
    s <- seq(1, 40, by = 2^k)
    b <- define_array("float64", c(length(s), length(s)))
    z$root$add_array(as.character(k), b)$write(m[s, s])
  }
  z$root$set_attribute("multiscales", list(layout = list(list(asset = "0"), list(asset = "1", derived_from = "0"),
                                                         list(asset = "2", derived_from = "1"))))
  z
}
