"""The test session's settings, made before any test module imports numpy.

BLAS on one thread, as dyn pins it (treedyn/cli/__init__.py), unless the environment says
otherwise: the tests' matrices are small, and OpenBLAS threads that spin waiting for a core
the other pytest worker (or any other process) holds made the identification tests ~10x
slower on a loaded 2-core machine (talos and ur5 in tests/test_identify.py: 263 s with two
BLAS threads, 23 s with one). dyn run in the test process then uses the BLAS it runs with
as a program.

The slowest tests carry the ``slow`` marker (:data:`SLOW`, whole files: processes, signals
and clusters, the golden runs, fuzzing, identification, hostile and huge inputs), so that
``python -m pytest -m "not slow"`` is a fast loop that still runs every command
(tests/test_cli.py, the documented examples of tests/test_docs.py); docs/testing.md says
what it leaves out. The whole suite (CI) runs them all.
"""
import os

import pytest

SLOW = frozenset({  # test files whose tests are marked slow: ~80 % of the suite's time
    "test_identify.py", "test_golden.py", "test_parts.py", "test_distributed.py",
    "test_mjcf_fuzz.py", "test_urdf_fuzz.py", "test_parser_trust.py", "test_terminal_trust.py",
    "test_numeric_trust.py", "test_xacro_trust.py", "test_write_failures.py", "test_scaling.py",
    "test_inertia_large.py", "test_unread_inputs.py", "test_data_safety.py", "test_bounds.py",
    "test_signals.py", "test_hostile.py",
})

for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")


def pytest_sessionfinish(session, exitstatus):
    """The dyn fork server of this test process, if one started (tests/forked.py), ends
    with the session."""
    import sys

    forked = sys.modules.get("forked")
    if forked is not None:
        forked.stop()


def pytest_collection_modifyitems(config, items):
    """The tests of the :data:`SLOW` files are marked ``slow``."""
    for item in items:
        if item.path.name in SLOW:
            item.add_marker(pytest.mark.slow)


@pytest.fixture(autouse=True)
def engine_settings():
    """The engine's process-wide settings (threads, chunk, memory) as they were before each
    test. A dyn command run in this process sets them from TREEDYN_THREADS and TREEDYN_CHUNK
    (tests/test_cli.py runs some with tiny chunks); left behind, a small chunk put every
    later small batch of that worker on the thread pool, one GIL hand-over per chunk: the
    excitation tests, a few thousand regressor calls of 30 states, took 49 s instead of
    1.3 s after them."""
    from treedyn.engine.batch.threads import configured

    with configured():
        yield
