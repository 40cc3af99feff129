# Large reads of narrow types keep the stored width (src/compact_vector.c):
# the values, types and dims are those of the eager read, whatever R does
# with the vector afterwards.

compact_state <- function(x) .Call(zarr:::ffi_compact_state, x)

# An array of `dtype` holding `x` (3-d, several chunks, one never written).
compact_fixture <- function(dtype, x, fill = NULL, endian = "little") {
  d <- define_array(dtype, dim(x))
  d$chunk_shape <- c(64, 50, 2)
  if (!is.null(fill)) d$fill_value <- fill
  if (endian == "big") d$add_codec("bytes", list(endian = "big"))
  z <- create_zarr(tempfile(fileext = ".zarr"))
  a <- z$add_array("/", "a", d)
  a$write(x[1:256, , , drop = FALSE], list(c(1, 256), c(1, 400), c(1, 2)))
  a
}

eager <- function(expr) withr::with_options(list(zarr.compact_results = FALSE), expr)

test_that("large reads of narrow types give the eager read's values, stored at their own width", {
  set.seed(27)
  n <- 300 * 400 * 2
  cases <- list(
    uint8 = list(sample(0:254, n, TRUE), NULL),
    int8 = list(sample(-127:126, n, TRUE), NULL),
    int16 = list(sample(-30000:30000, n, TRUE), -9999L),   # a fill value that marks missing ones
    uint16 = list(sample(0:65534, n, TRUE), NULL),
    bool = list(sample(c(TRUE, FALSE), n, TRUE), NULL),
    float16 = list(c(NA, NaN, Inf, round(runif(n - 3) * 64) / 8), NULL),
    float32 = list(c(NA, NaN, -Inf, runif(n - 3)), NULL),
    uint32 = list(as.double(sample(0:2e9, n, TRUE)), NULL)
  )
  for (dt in names(cases)) for (endian in c("little", "big")) {
    x <- array(cases[[dt]][[1]], c(300, 400, 2))
    if (dt == "int16") x[5, 6, 1] <- -9999L
    a <- compact_fixture(dt, x, cases[[dt]][[2]], endian)
    want <- eager(a[, , ])
    got <- a[, , ]
    info <- paste(dt, endian)
    expect_identical(compact_state(got), "stored", info = info)
    expect_identical(compact_state(want), "plain", info = info)
    expect_identical(typeof(got), typeof(want), info = info)
    expect_identical(dim(got), c(300L, 400L, 2L), info = info)
    # element, region and whole-vector access without converting everything
    expect_identical(got[7, 9, 2], want[7, 9, 2], info = info)
    expect_identical(got[290:300, 1:3, 2], want[290:300, 1:3, 2], info = info)  # never written: fill
    expect_identical(sum(got, na.rm = TRUE), sum(want, na.rm = TRUE), info = info)
    expect_identical(anyNA(got), anyNA(want), info = info)
    expect_identical(compact_state(got), "stored", info = info)
    if (dt == "int16") expect_true(is.na(got[5, 6, 1]), info = info)
    # what the eager read gives, with every element written as data
    if (dt %in% c("uint8", "int8", "uint16", "bool", "uint32"))
      expect_identical(want[1:256, , ], x[1:256, , , drop = FALSE], info = info)
    # all of it at once: an ordinary vector from then on
    expect_identical(got, want, info = info)
    expect_identical(got + 0L, want + 0L, info = info)
    expect_identical(compact_state(got), "converted", info = info)
  }
})

test_that("copies of a compact result are independent", {
  x <- array(as.integer(seq_len(300 * 400 * 2) %% 60000L), c(300, 400, 2))
  a <- compact_fixture("uint16", x)
  y <- a[, , ]
  y2 <- y
  y2[1, 1, 1] <- -1L
  expect_identical(y2[1, 1, 1], -1L)
  expect_identical(y[1, 1, 1], x[1, 1, 1])
  expect_identical(y[1:256, , ], x[1:256, , , drop = FALSE])
  f <- tempfile(fileext = ".rds")
  saveRDS(y, f)
  back <- readRDS(f)
  expect_identical(compact_state(back), "plain") # readable without this package
  expect_identical(back, eager(a[, , ]))
})

test_that("a large result's elements live outside R's heap until it is collected, and loops stay bounded", {
  # 64 MiB of uint16 (PAYLOAD_OWN_MIN in src/compact_vector.c): one chunk
  # written, the others the fill value (0)
  d <- define_array("uint16", c(8192, 4096))
  d$chunk_shape <- c(1024, 1024)
  d$fill_value <- 0L
  a <- create_zarr(tempfile(fileext = ".zarr"))$add_array("/", "a", d)
  x <- matrix(as.integer(seq_len(1024^2) %% 60000L), 1024)
  a$write(x, list(c(1, 1024), c(1, 1024)))
  payloads <- function() .Call(zarr:::ffi_compact_payloads)
  invisible(gc())
  base <- payloads()[1]
  y <- a[, ]
  expect_identical(compact_state(y), "stored")
  expect_identical(dim(y), c(8192L, 4096L))
  expect_equal(payloads()[1] - base, 2 * 8192 * 4096)
  expect_identical(y[1:1024, 1:1024], x)
  expect_identical(y[c(1, 1025, 8192), 4096], c(0L, 0L, 0L))
  y2 <- y # a copy shares the elements until it is changed
  y2[1, 1] <- 0L
  expect_identical(c(y2[1, 1], y[1, 1], y2[2, 1]), c(0L, x[1, 1], x[2, 1]))
  expect_identical(compact_state(y), "stored")
  rm(y, y2)
  invisible(gc())
  expect_equal(payloads()[1], base)
  # reads whose results are dropped: a collection frees them before the
  # payloads pass the bound
  for (i in 1:8) expect_identical(a[, ][1024, 1], x[1024, 1])
  p <- payloads()
  expect_lte(p[1], p[2])
  expect_lte(p[1] - base, 320 * 2^20)
})

test_that("small reads, other types and the option stay eager", {
  x <- array(as.integer(seq_len(300 * 400 * 2) %% 60000L), c(300, 400, 2))
  a <- compact_fixture("uint16", x)
  expect_false(compact_state(a[1:10, 1:10, 1]) %in% c("stored", "converted"))
  expect_identical(compact_state(a$read()), "stored")
  withr::local_options(zarr.compact_results = FALSE)
  expect_identical(compact_state(a$read()), "plain")
  b <- compact_fixture("int32", x)
  withr::local_options(zarr.compact_results = TRUE)
  expect_identical(compact_state(b[, , ]), "plain") # int32 is R's own width
  expect_true(zarr_options("compact_results"))
})

test_that("16-bit chunks in C order land in large results exactly, kept or widened", {
  set.seed(31)
  # R's columns along the chunk's fastest dimension are 72,000 bytes apart or
  # more: the copy that writes whole lines; 70 rows and 20 columns per chunk
  # leave partial groups on both sides
  for (dt in c("int16", "uint16")) {
    vals <- if (dt == "int16") -30000:30000 else 0:65000
    x <- array(sample(vals, 200 * 180 * 20, TRUE), c(200, 180, 20))
    x[3, 4, 5] <- x[199, 170, 19] <- 7L
    d <- define_array(dt, dim(x))
    d$portable <- TRUE # C order, as other software writes
    d$chunk_shape <- c(70, 60, 20)
    d$fill_value <- 7L # marks missing elements: read as NA
    a <- create_zarr(tempfile(fileext = ".zarr"))$add_array("/", "a", d)
    a$write(x)
    want <- x
    want[want == 7L] <- NA
    got <- a[, , ]
    expect_identical(compact_state(got), "stored", info = dt)
    expect_identical(got[, , ], want, info = dt)
    expect_identical(eager(a[, , ]), want, info = dt)
    expect_identical(a[2:199, 5:180, 3:20], want[2:199, 5:180, 3:20], info = dt)
    withr::with_options(list(zarr.fill_as_na = FALSE), expect_identical(a[, , ], x, info = dt))
  }
})

test_that("results made from kept memory never share it with a result still in use", {
  pool <- function() .Call(zarr:::ffi_result_pool, NULL)[1:2]
  held <- function() .Call(zarr:::ffi_result_pool, NULL)[3]
  d <- define_array("uint16", c(128, 128, 64))
  d$chunk_shape <- c(64, 64, 64)
  a <- create_zarr(tempfile(fileext = ".zarr"))$add_array("/", "a", d)
  x <- array(as.integer(seq_len(128 * 128 * 64) %% 60000L), c(128, 128, 64))
  a$write(x)
  f <- define_array("float64", c(256, 256))
  f$chunk_shape <- c(64, 64)
  b <- create_zarr(tempfile(fileext = ".zarr"))$add_array("/", "b", f)
  y <- matrix(as.double(seq_len(256^2)) / 7, 256)
  b$write(y)
  block <- function(k) { # the k-th 64^3 block (512 KiB stored, compact)
    i <- (k - 1L) %% 2L * 64L; j <- (k - 1L) %/% 2L * 64L
    list(i = i + 1:64, j = j + 1:64)
  }
  # results dropped and collected as the loop goes, others kept: every one
  # kept still holds its own values at the end
  kept <- list()
  for (r in 1:40) {
    k <- (r - 1L) %% 4L + 1L
    s <- block(k)
    v <- a[s$i, s$j, ]
    w <- b[s$i, s$j] # 32 KiB: below the kept sizes
    big <- b[, ] # 512 KiB of doubles: an ordinary vector from kept memory
    expect_identical(compact_state(v), "stored")
    if (r %% 7L == 0L) kept[[length(kept) + 1L]] <- list(k = k, v = v, big = big)
    if (r %% 5L == 0L) invisible(gc())
  }
  for (e in kept) {
    s <- block(e$k)
    expect_identical(e$v[, , ], x[s$i, s$j, ])
    expect_identical(e$big, y)
  }
  rm(kept, v, big, e)
  invisible(gc())
  expect_identical(held(), 0)
  # R collects such results on its own as it would others: 400 reads of
  # 512 KiB (200 MiB) without a gc() call do not all stay held
  for (r in 1:400) v <- a[1:64, 1:64, ]
  expect_lt(held(), 100 * 2^20)
  rm(v)
  invisible(gc())
  p <- pool()
  expect_gt(p[1], 0)            # freed results were kept for the next ones
  expect_lte(p[1], 16)
  expect_lte(p[2], 64 * 2^20)
  # zarr.scratch_bytes = 0: nothing is kept after the next read
  withr::with_options(list(zarr.scratch_bytes = 0), {
    v <- a[1:64, 1:64, ]
    expect_identical(pool(), c(0, 0))
    rm(v)
    invisible(gc())
    expect_identical(pool(), c(0, 0))
    expect_identical(a[65:128, 1:64, 1:2], x[65:128, 1:64, 1:2])
  })
})
