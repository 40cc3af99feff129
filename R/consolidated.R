# Consolidated metadata: a copy of every node's metadata kept at the root
# (v2 ".zmetadata", v3 "consolidated_metadata" in the root zarr.json), so a
# hierarchy opens without listing the store.

consolidated_children <- function(group) NULL
consolidated_metadata_of <- function(group, name) NULL
