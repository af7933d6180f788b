"""A dynamics request run to its end: one state, a stream, text parts over processes, or a
Dask cluster; and ``dyn bench``, which times them."""
