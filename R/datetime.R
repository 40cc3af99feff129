# numpy's datetime64 and timedelta64: int64 counts of a unit (times a scale
# factor) since 1970-01-01 UTC. In R they are POSIXct (clock units), Date
# (calendar units: Y, M, W, D) and difftime in seconds; NaT is NA.

# seconds per unit as num / den, so that conversions stay exact
time_units <- list(Y = c(NA, 1), M = c(NA, 1), W = c(604800, 1), D = c(86400, 1), h = c(3600, 1),
                   m = c(60, 1), s = c(1, 1), ms = c(1, 1e3), us = c(1, 1e6), ns = c(1, 1e9))

time_unit_seconds <- function(config) {
  unit <- config[["unit"]] %||% "s"
  if (!unit %in% names(time_units))
    zarr_abort("data_type", sprintf("unsupported time unit '%s'", unit))
  scale <- as.numeric(config[["scale_factor"]] %||% 1)
  f <- time_units[[unit]]
  list(unit = unit, scale = scale, num = f[1L] * scale, den = f[2L], seconds = f[1L] * scale / f[2L])
}

time_unit_is_calendar <- function(config) (config[["unit"]] %||% "s") %in% c("Y", "M", "W", "D")

# values read as double counts -> R time classes
time_from_storage <- function(x, dt) {
  u <- time_unit_seconds(dt$configuration)
  d <- dim(x)
  x[x == -9223372036854775808] <- NA # NaT is missing, whatever the fill value
  if (dt$data_type == "numpy.timedelta64") {
    out <- if (is.na(u$seconds)) x * u$scale else x * u$num / u$den
    out <- as.difftime(out, units = "secs")
  } else if (u$unit %in% c("Y", "M")) {
    months <- x * u$scale * (if (u$unit == "Y") 12 else 1)
    ok <- !is.na(months)
    out <- rep(as.Date(NA), length(x))
    out[ok] <- as.Date(sprintf("%04d-%02d-01", as.integer(1970 + months[ok] %/% 12),
                               as.integer(months[ok] %% 12 + 1)))
  } else if (time_unit_is_calendar(dt$configuration)) {
    out <- as.Date(x * u$num / u$den / 86400, origin = "1970-01-01")
  } else {
    out <- as.POSIXct(x * u$num / u$den, origin = "1970-01-01", tz = "UTC")
  }
  if (!is.null(d)) dim(out) <- d
  out
}

# R times -> double counts of the array's unit (whole numbers), rounded down
# (toward -Inf) as numpy casts to a coarser unit: 18:00 is that day for "D".
time_to_storage <- function(x, dt, path = NULL) {
  u <- time_unit_seconds(dt$configuration)
  if (dt$data_type == "numpy.timedelta64") {
    secs <- if (inherits(x, "difftime")) as.numeric(x, units = "secs") else as.numeric(x)
    if (is.na(u$seconds)) zarr_abort("value", "timedelta64 in years or months cannot be written", array = path)
    return(floor_units(secs, u))
  }
  if (u$unit %in% c("Y", "M")) {
    lt <- as.POSIXlt(x, tz = "UTC")
    months <- (lt$year - 70) * 12 + lt$mon
    return(floor(if (u$unit == "Y") (lt$year - 70) / u$scale else months / u$scale))
  }
  secs <- if (inherits(x, "Date")) as.numeric(x) * 86400
          else if (inherits(x, "POSIXt")) as.numeric(as.POSIXct(x))
          else zarr_abort("value", "datetime64 arrays are written from Date or POSIXct values", array = path)
  floor_units(secs, u)
}

# Seconds -> whole units, rounded down; a count within the rounding error of
# the seconds' double (0.3 s is 0.29999... s) from a whole number is that number.
floor_units <- function(secs, u) {
  x <- secs * u$den / u$num
  out <- floor(x)
  r <- round(x)
  near <- which(abs(x - r) <= 8 * .Machine$double.eps * (abs(x) + u$den / u$num))
  out[near] <- r[near]
  out
}
