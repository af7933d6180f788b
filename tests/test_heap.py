"""The heap tuned for a run over many states (treedyn.pipeline.heap), and set back after it."""
from __future__ import annotations

import ctypes
import subprocess
import sys

import pytest

from test_cli import ROOT

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or not hasattr(ctypes.CDLL(None), "mallinfo2"),
    reason="glibc's malloc (mallinfo2: glibc 2.33 or later)")

KEPT = """
import ctypes
from treedyn.pipeline.heap import for_many_states

class Info(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
        "fordblks", "keepcost")]

libc = ctypes.CDLL(None)
libc.mallinfo2.restype = Info
libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]

def kept():  # whether 8 MB freed stay with malloc, at the top of its heap
    block = libc.malloc(8 << 20)
    ctypes.memset(block, 1, 8 << 20)
    libc.free(block)
    return libc.mallinfo2().keepcost >= 8 << 20

with for_many_states():
    inside = kept()
print(inside, kept())
"""


def test_freed_memory_is_kept_during_the_run_only():
    """Inside the run, malloc keeps 8 MB freed for the next chunk; after it, glibc's own
    settings are back and that memory is handed back (a Python caller's process)."""
    done = subprocess.run([sys.executable, "-c", KEPT], capture_output=True, text=True,
                          cwd=ROOT, timeout=60, env={"PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "False"]


FASTBINS = KEPT.split("def kept()")[0] + """
from treedyn.pipeline.heap import for_model_loading

def fastbin_bytes():  # what 100 small chunks freed leave in fastbins (tcache takes 7)
    blocks = [libc.malloc(64) for _ in range(100)]
    for block in blocks:
        libc.free(block)
    return libc.mallinfo2().fsmblks

with for_model_loading({}):
    inside = fastbin_bytes()
print(inside, fastbin_bytes() > 0)
"""


def test_no_fastbins_while_a_model_is_read_only():
    """While a model is read, freed small chunks (libxml2's nodes) are merged as they are
    freed, none kept in fastbins for one long consolidation later; after it, glibc's
    fastbins are back."""
    done = subprocess.run([sys.executable, "-c", FASTBINS], capture_output=True, text=True,
                          cwd=ROOT, timeout=60, env={"PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["0", "True"]
