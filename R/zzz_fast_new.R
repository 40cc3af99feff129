# Run when the package is installed, after every class is defined (this
# file is collated last): the generators are saved with the cheaper
# constructor of R/r6_fast.R, so that loading the package fetches none of
# them from the lazy-load database.
local(for (g in r6_fast_classes()) r6_use_fast_new(g))
