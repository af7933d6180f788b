"""The ``dyn`` command line (:mod:`treedyn.cli.main`).

dyn runs the engine's batches on its own thread pool, two threads of small BLAS calls;
OpenBLAS (numpy's BLAS) threading each of those calls as well oversubscribes the cores: on
2 cores, forward dynamics on two engine threads was no faster than on one, and the mass
matrix slower. So the command pins BLAS to one thread per engine thread, before numpy is
first imported; a value already set in the environment is kept.
"""
import os

for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")
