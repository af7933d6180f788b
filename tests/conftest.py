"""The test session's settings, made before any test module imports numpy.

BLAS on one thread, as dyn pins it (treedyn/cli/__init__.py), unless the environment says
otherwise: the tests' matrices are small, and OpenBLAS threads that spin waiting for a core
the other pytest worker (or any other process) holds made the identification tests ~10x
slower on a loaded 2-core machine (talos and ur5 in tests/test_identify.py: 263 s with two
BLAS threads, 23 s with one). dyn run in the test process then uses the BLAS it runs with
as a program.
"""
import os

for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")


def pytest_sessionfinish(session, exitstatus):
    """The dyn fork server of this test process, if one started (tests/forked.py), ends
    with the session."""
    import sys

    forked = sys.modules.get("forked")
    if forked is not None:
        forked.stop()
