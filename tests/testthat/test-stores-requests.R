# How many requests store operations make, counted by the S3 test server.

test_that("print() of an S3 array makes one listing, not one request per chunk", {
  s3 <- s3_server()
  st <- s3$store("private", "print.zarr")
  st$create_group("/", "")
  d <- define_array("int32", c(20, 20))
  d$chunk_shape <- c(1, 1)
  a <- zarr$new(st)$add_array("/", "a", d)
  a$write(matrix(1:400, 20))
  s3$reset()
  out <- capture.output(suppressMessages(print(a)))
  stats <- s3$stats()
  expect_identical(stats$requests, 1L)
  expect_true(all(grepl("list-type=2", stats$log$query)))
  # and the size it shows is the sum of the 400 chunks
  sizes <- st$key_sizes("a/")
  expect_length(sizes, 401)
  expect_identical(sort(names(sizes)), sort(st$list_prefix("a/")))
  expect_identical(st$getsize_prefix("a/"), sum(vapply(names(sizes), st$getsize, 0)))
  # a prefix with nothing below
  expect_identical(st$key_sizes("nothing/"), stats::setNames(numeric(), character()))
  expect_identical(st$getsize_prefix("nothing/"), 0)
})
