"""``dyn ARGS`` as a whole process, forked from one that has imported dyn's libraries.

A ``dyn`` process spends ~0.3 s of CPU starting Python and importing numpy, typer, lxml
and the engine, parsers and pipeline before it runs a command that often takes a few
milliseconds. :func:`dyn_process` starts one server process per test process, which imports
those once and then forks a child per run: each child is a whole new process (its own
memory, pid, file descriptors, signals, exit code; it may fork workers itself) that has
run nothing before, so its results do not depend on what earlier tests did -- unlike a run
inside the long test process (tests/in_process.py), whose numbers can move in their last
bits with the work arrays, plans and chunk sizes earlier runs left behind.

The child gets the run's stdin, stdout and stderr as its file descriptors 0, 1 and 2
(pipes, as subprocess.run(capture_output=True) gives them), the environment and folder
asked, and runs ``treedyn.cli.run()`` with ``sys.argv`` as ``python -c`` sets it. The
``treedyn.cli`` package itself is imported in the child, after its environment is set, as
a fresh process does: it reads settings (TREEDYN_STREAM_CHUNK) when it is imported. What
the server imported before the fork is only what every dyn run imports anyway; the
interpreter's own start (locale, stdio encoding, ``dyn --version`` without numpy) is the
server's, so tests of the program's entry keep starting ``python`` themselves.
"""
from __future__ import annotations

import json
import os
import selectors
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

# What every dyn run imports, loaded once in the server; never treedyn.cli (see above),
# never anything a run imports only on some paths (distributed, pyarrow, h5py).
PRELOAD = ("numpy", "lxml.etree", "typer", "tabulate", "orjson", "treedyn.engine",
           "treedyn.engine.batch.sweeps", "treedyn.engine.crba", "treedyn.engine.aba",
           "treedyn.parsers", "treedyn.parsers.urdf", "treedyn.parsers.mjcf",
           "treedyn.pipeline.stream", "treedyn.pipeline.outputs", "treedyn.pipeline.parts",
           "treedyn.pipeline.jsonl", "treedyn.pipeline.csvfile", "treedyn.pipeline.npz",
           "subprocess", "tempfile", "concurrent.futures", "logging")
MESSAGE = 1 << 20  # bytes of one request at most (arguments, folder and environment)
_lock = threading.Lock()
_server = None  # (Popen, socket) of this process's server, started on first use


def serve(descriptor: int) -> None:
    """The server: import :data:`PRELOAD`, then for each request on the socket fork a
    child that runs it (:func:`become`), send back its pid, wait for it, send its exit
    code. Ends when the socket closes (the test process ended)."""
    import importlib

    for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_variable, "1")  # as treedyn.cli does before numpy loads
    for name in PRELOAD:
        try:
            importlib.import_module(name)
        except ImportError:
            pass
    assert "treedyn.cli" not in sys.modules and "distributed" not in sys.modules
    channel = socket.socket(fileno=descriptor)
    while True:
        message, descriptors, _, _ = socket.recv_fds(channel, MESSAGE, 3)
        if not message:
            return
        pid = os.fork()
        if pid == 0:
            channel.close()
            become(json.loads(message), descriptors)
            return  # never reached: the dyn program ends the process
        for descriptor_ in descriptors:
            os.close(descriptor_)
        channel.sendall(struct.pack("q", pid))
        _, status = os.waitpid(pid, 0)
        channel.sendall(struct.pack("q", os.waitstatus_to_exitcode(status)))


def become(request: dict, descriptors: list) -> None:
    """In the forked child: take the run's stdin, stdout, stderr, environment, folder and
    arguments, and run the dyn program (it ends the process)."""
    for target, descriptor in enumerate(descriptors):
        os.dup2(descriptor, target)
        os.close(descriptor)
    os.environ.clear()
    os.environ.update(request["env"])
    os.chdir(request["cwd"])
    sys.argv = ["-c", *request["args"]]
    from treedyn.cli import run

    run()


def _start():
    here, there = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    tests = str(Path(__file__).resolve().parent)
    process = subprocess.Popen(
        [sys.executable, "-c", f"import sys; sys.path.insert(0, {tests!r}); import forked; "
         f"forked.serve({there.fileno()})"],
        pass_fds=[there.fileno()], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL)
    there.close()
    return process, here


def _channel() -> socket.socket:
    global _server
    if _server is None or _server[0].poll() is not None:
        _server = _start()
    return _server[1]


def stop() -> None:
    """End this process's server (if it started one) and wait for it, so its time and
    its children's count as this process's children's (tests/conftest.py, at the end of
    the session)."""
    global _server
    with _lock:
        if _server is not None:
            process, channel = _server
            _server = None
            channel.close()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _receive(channel: socket.socket) -> int:
    data = channel.recv(8)
    if len(data) != 8:
        raise RuntimeError("the dyn fork server ended")
    return struct.unpack("q", data)[0]


def dyn_process(args: list, *, cwd: Path | str, env: dict | None = None,
                stdin: bytes | None = None, timeout: float = 300
                ) -> subprocess.CompletedProcess:
    """``dyn ARGS`` (as ``python -c "from treedyn.cli import run; run()" ARGS``) in a new
    process started in ``cwd`` with the environment ``env`` (os.environ if None) and
    stdin ``stdin`` (/dev/null if None), stdout and stderr pipes: what
    subprocess.run(capture_output=True, timeout=timeout) returns, TimeoutExpired included
    (the process is killed first)."""
    args = [str(arg) for arg in args]
    request = json.dumps({"args": args, "cwd": str(Path(cwd).resolve()),
                          "env": dict(os.environ if env is None else env)}).encode()
    out_read, out_write = os.pipe()
    err_read, err_write = os.pipe()
    if stdin is None:
        in_read, in_write = os.open(os.devnull, os.O_RDONLY), None
    else:
        in_read, in_write = os.pipe()
    with _lock:
        channel = _channel()
        try:
            socket.send_fds(channel, [request], [in_read, out_write, err_write])
        finally:
            for descriptor in (in_read, out_write, err_write):
                os.close(descriptor)
        pid = _receive(channel)
        output = _collect(pid, out_read, err_read, in_write, stdin, timeout)
        code = _receive(channel)
    if isinstance(output, subprocess.TimeoutExpired):
        raise output
    return subprocess.CompletedProcess(args, code, *output)


def _collect(pid, out_read, err_read, in_write, stdin, timeout):
    """(stdout, stderr) read to their ends while stdin is written; TimeoutExpired (the
    child killed) when that takes longer than ``timeout`` seconds."""
    chunks = {out_read: [], err_read: []}
    deadline = time.monotonic() + timeout
    with selectors.DefaultSelector() as selector:
        for descriptor in chunks:
            selector.register(descriptor, selectors.EVENT_READ)
        pending = memoryview(stdin or b"")
        if in_write is not None:
            os.set_blocking(in_write, False)
            selector.register(in_write, selectors.EVENT_WRITE)
        expired = False
        while selector.get_map():
            left = deadline - time.monotonic()
            if left <= 0 and not expired:
                expired = True
                os.kill(pid, signal.SIGKILL)
            elif left < -5:  # its own children still hold the pipes: leave them
                for key in list(selector.get_map().values()):
                    selector.unregister(key.fd)
                    os.close(key.fd)
                break
            for key, _ in selector.select(max(left, 0.1) if not expired else 1):
                descriptor = key.fd
                if descriptor == in_write:
                    try:
                        pending = pending[os.write(descriptor, pending[:65536]):]
                    except BrokenPipeError:
                        pending = pending[:0]
                    if not pending:
                        selector.unregister(descriptor)
                        os.close(descriptor)
                    continue
                data = os.read(descriptor, 65536)
                if data:
                    chunks[descriptor].append(data)
                else:
                    selector.unregister(descriptor)
                    os.close(descriptor)
    out, err = b"".join(chunks[out_read]), b"".join(chunks[err_read])
    if expired:
        return subprocess.TimeoutExpired(["dyn"], timeout, out, err)
    return out, err
