# Issue 28 item 4: CF times given by users, and what sel() says when it
# finds nothing.

cf_time_array <- function(g, name, values, attrs, dims = name) {
  b <- define_array("float64", length(values))
  b$dimension_names <- dims
  a <- g$add_array(name, b)
  a$write(values)
  for (n in names(attrs)) a$set_attribute(n, attrs[[n]])
  a
}

test_that("an impossible date is an error naming the date and the calendar, not moved", {
  g <- create_zarr()$root
  tm <- cf_time_array(g, "time", 0:3, list(units = "days since 2001-02-26", calendar = "standard"))
  expect_error(tm$sel(time = "2001-02-29"), class = "zarr_error_value",
               regexp = "2001-02-29.*calendar")
  expect_error(tm$sel(time = "2001-13-01"), class = "zarr_error_value")
  # a real date still selects (2001-03-01 is the fourth day)
  expect_equal(as.character(tm$sel(time = "2001-03-01")$values), "2001-03-01")
  # the conversion itself refuses the day in every calendar that lacks it
  ut <- zarr:::cf_user_time
  expect_error(ut("2001-02-29", "proleptic_gregorian"), class = "zarr_error_value")
  expect_error(ut("2000-02-29", "noleap"), class = "zarr_error_value", regexp = "noleap")
  expect_error(ut("2000-02-31", "360_day"), class = "zarr_error_value")
  expect_error(ut("1582-10-10", "standard"), class = "zarr_error_value")
  expect_identical(ut("2000-02-30", "360_day"), zarr:::cf_cal_days(2000, 2, 30, "360_day") * 86400)
  expect_identical(ut("2000-02-29", "all_leap"), zarr:::cf_cal_days(2000, 2, 29, "all_leap") * 86400)
  # writing an impossible date through CF encoding is refused too
  enc <- zarr:::cf_encoding(list(units = "days since 2001-01-01", calendar = "standard"),
                            zarr:::zarr_data_type$new("float64", 0))
  expect_error(zarr:::cf_encode("2001-02-29", enc), class = "zarr_error_value", regexp = "2001-02-29")
})

test_that("sel() errors name the date asked, the calendar and the coordinate's range", {
  g <- create_zarr()$root
  tm <- cf_time_array(g, "time", 0:3, list(units = "days since 2020-01-01"))
  err <- expect_error(tm$sel(time = "2021-06-01"), class = "zarr_error_index")
  msg <- conditionMessage(err)
  expect_match(msg, "2021-06-01", fixed = TRUE)
  expect_match(msg, "2020-01-01T00:00:00 to 2020-01-04T00:00:00", fixed = TRUE)
  expect_match(msg, "proleptic_gregorian", fixed = TRUE)
  err <- expect_error(tm$sel(time = c("2021-01-01", "2021-02-01")), class = "zarr_error_index")
  expect_match(conditionMessage(err), "2021-01-01T00:00:00 and 2021-02-01T00:00:00", fixed = TRUE)
  expect_match(conditionMessage(err), "runs from 2020-01-01", fixed = TRUE)
  # numbers: the range without a calendar
  lat <- cf_time_array(g, "lat", c(-10, 0, 10), list())
  err <- expect_error(lat$sel(lat = 5), class = "zarr_error_index")
  expect_match(conditionMessage(err), "runs from -10 to 10)", fixed = TRUE)
})

test_that("noleap coordinates: sel() errors say the calendar", {
  skip_if_not_installed("CFtime")
  g <- create_zarr()$root
  tm <- cf_time_array(g, "time", c(0, 31, 58), list(units = "days since 2001-01-01", calendar = "noleap"))
  expect_error(tm$sel(time = "2000-02-29"), class = "zarr_error_value", regexp = "noleap")
  err <- expect_error(tm$sel(time = "2005-01-01"), class = "zarr_error_index")
  expect_match(conditionMessage(err), "calendar 'noleap'", fixed = TRUE)
  expect_match(conditionMessage(err), "2001-01-01T00:00:00 to 2001-02-28T00:00:00", fixed = TRUE)
})
