# AnnData stores written by anndata (Debian's python3-anndata), then read
# back by anndata: prints, per store, the values as anndata reads them
# (dump() comes from anndata_dump.py, prepended).
# usage: anndata_stores.py DIR

out_dir = sys.argv[1]
rng = np.random.default_rng(42)
n_obs, n_var = 7, 5


def csr_x(dtype=np.float32):
    m = sp.random(n_obs, n_var, density=0.4, format="csr", random_state=3, dtype=np.float64)
    m.data = np.round(m.data * 100).astype(dtype)
    return m


def obs_frame():
    return pd.DataFrame({
        "cell_type": pd.Categorical(["T", "B", None, "T", "NK", "B", None]),
        "stage": pd.Categorical(["lo", "hi", "mid", "hi", "lo", "lo", "mid"],
                                categories=["lo", "mid", "hi"], ordered=True),
        "batch_n": pd.Categorical([3, 1, 3, 2, 1, 1, 2]),
        "label": ["a", "b", "c", "d", "e", "f", "g"],
        "n_genes": np.array([10, 20, 30, 40, 50, 60, 70], dtype=np.int64),
        "n_i32": np.arange(n_obs, dtype=np.int32) - 3,
        "score": np.array([0.5, np.nan, 1.25, -2.0, 3.0, 1e-300, 7.0]),
        "keep": np.array([True, False, True, True, False, True, False]),
        "nint": pd.array([1, None, 3, 4, None, 6, 7], dtype="Int64"),
        "nbool": pd.array([True, None, False, True, False, None, True], dtype="boolean"),
    }, index=["cell%d" % i for i in range(n_obs)])


def var_frame():
    return pd.DataFrame({
        "symbol": ["G%d" % i for i in range(n_var)],
        "mean": np.linspace(0, 1, n_var),
        "highly_variable": np.array([True, False, True, False, True]),
        "chrom": pd.Categorical(["1", "2", "1", "X", "2"]),
    }, index=["ENSG%03d" % i for i in range(n_var)])


def full_store(path):
    X = csr_x()
    a = anndata.AnnData(X=X, obs=obs_frame(), var=var_frame())
    a.layers["dense"] = np.arange(n_obs * n_var, dtype=np.float64).reshape(n_obs, n_var) / 4
    a.layers["csc"] = sp.csc_matrix(X * 2)
    a.layers["counts"] = sp.csr_matrix(np.round(X.toarray()).astype(np.int32))
    # indices left unsorted within rows, as scipy allows
    a.layers["unsorted"] = sp.csr_matrix((np.array([1., 2., 3., 4.]), np.array([3, 1, 4, 0]),
                                          np.array([0, 2, 2, 4, 4, 4, 4, 4])), shape=(n_obs, n_var))
    a.obsm["X_pca"] = rng.normal(size=(n_obs, 3))
    a.obsm["X_umap"] = rng.normal(size=(n_obs, 2)).astype(np.float32)
    a.obsm["meta"] = pd.DataFrame({"x": np.arange(n_obs, dtype=np.float64), "g": pd.Categorical(list("aabbcca"))},
                                  index=a.obs_names)
    a.varm["PCs"] = rng.normal(size=(n_var, 3))
    a.obsp["distances"] = sp.csr_matrix(np.triu(rng.random((n_obs, n_obs)) > 0.6) * 1.5)
    a.varp["corr"] = np.eye(n_var)
    a.uns["params"] = {"n_neighbors": 15, "method": "umap", "alpha": 0.25, "use": True,
                       "ints": np.array([3, 1, 2]), "floats": np.array([0.5, 1.5]),
                       "names": np.array(["p", "q", "r"]), "grid": np.arange(6).reshape(2, 3),
                       "inner": {"deep": {"k": "v"}, "x": 2.5}}
    a.uns["title"] = "a title"
    a.write_zarr(path)


def dense_store(path):
    a = anndata.AnnData(X=np.arange(n_obs * n_var, dtype=np.float32).reshape(n_obs, n_var) - 10,
                        obs=obs_frame()[["label"]], var=var_frame()[["symbol"]])
    a.write_zarr(path)


def csc_store(path):
    a = anndata.AnnData(X=sp.csc_matrix(csr_x(np.float64)), obs=obs_frame()[["cell_type"]])
    a.write_zarr(path)


result = {}
for name, make in [("full", full_store), ("dense", dense_store), ("csc", csc_store)]:
    path = os.path.join(out_dir, name + ".zarr")
    make(path)
    result[name] = dump(anndata.read_zarr(path))
print(json.dumps(result))
