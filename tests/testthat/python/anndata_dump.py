# What Debian's anndata (0.8) reads, as JSON: dump(a) of an AnnData object.
# Prepended to the scripts that use it (anndata_stores.py, anndata_read.py).
import warnings
warnings.simplefilter("ignore")
import anndata
import pandas as pd
import scipy.sparse as sp


def num(v):
    if v is None or v is pd.NA:
        return None
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, np.integer)):
        return int(v)
    f = float(v)
    return None if np.isnan(f) else f


def matrix(m):
    kind = "csr" if sp.isspmatrix_csr(m) else "csc" if sp.isspmatrix_csc(m) else "dense"
    d = m.toarray() if sp.issparse(m) else np.asarray(m)
    return {"kind": kind, "shape": list(d.shape), "values": [num(v) for v in d.ravel(order="C")]}


def frame(df):
    cols = {}
    for c in df.columns:
        s = df[c]
        if isinstance(s.dtype, pd.CategoricalDtype):
            cols[c] = {"kind": "categorical", "ordered": bool(s.cat.ordered),
                       "categories": [str(x) for x in s.cat.categories],
                       "values": [None if pd.isna(x) else str(x) for x in s]}
        elif s.dtype == object:
            cols[c] = {"kind": "string", "values": [None if x is None else str(x) for x in s]}
        else:
            cols[c] = {"kind": str(s.dtype), "values": [num(x) for x in s]}
    return {"index": [str(i) for i in df.index], "columns": list(df.columns), "data": cols}


def uns(x):
    if isinstance(x, pd.DataFrame):
        return dict(frame(x), kind="frame")
    if isinstance(x, pd.Categorical):
        return {"kind": "categorical", "ordered": bool(x.ordered), "categories": [str(c) for c in x.categories],
                "values": [None if pd.isna(v) else str(v) for v in x]}
    if sp.issparse(x):
        return dict(matrix(x), kind="sparse")
    if isinstance(x, dict):
        return {"kind": "dict", "items": {k: uns(v) for k, v in x.items()}}
    if isinstance(x, np.ndarray):
        if x.dtype.kind in "OUS":
            return {"kind": "strings", "shape": list(x.shape), "values": [str(v) for v in x.ravel()]}
        return {"kind": "array", "shape": list(x.shape), "values": [num(v) for v in x.ravel(order="C")]}
    if isinstance(x, str):
        return {"kind": "string", "value": x}
    return {"kind": "scalar", "value": num(x)}


def dump(a):
    return {
        "shape": list(a.shape),
        "X": matrix(a.X),
        "layers": {k: matrix(v) for k, v in a.layers.items()},
        "obs": frame(a.obs), "var": frame(a.var),
        "obsm": {k: (frame(v) if isinstance(v, pd.DataFrame) else matrix(v)) for k, v in a.obsm.items()},
        "varm": {k: matrix(v) for k, v in a.varm.items()},
        "obsp": {k: matrix(v) for k, v in a.obsp.items()},
        "varp": {k: matrix(v) for k, v in a.varp.items()},
        "uns": uns(dict(a.uns)),
    }
