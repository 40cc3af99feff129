# Stores read by Debian's anndata (0.8) with read_zarr(): prints, per store
# path given, the values as anndata reads them (dump() from anndata_dump.py,
# prepended).
# usage: anndata_read.py STORE...

print(json.dumps({path: dump(anndata.read_zarr(path)) for path in sys.argv[1:]}))
