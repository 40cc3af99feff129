# R's partial matching of `$` on lists, of arguments and of attributes is
# reported as a warning in every test, so that metadata read by a prefix of
# its name (`$chunk_shape` finding `chunk_shapes`) shows up in any test that
# reaches it; test-meta-exact-names.R fails on them.
options(warnPartialMatchDollar = TRUE, warnPartialMatchArgs = TRUE, warnPartialMatchAttr = TRUE)
