"""Reaching a Dask scheduler for ``--scheduler``: the optional extra, ``local`` (a cluster of
2 single-threaded worker processes here) or an address that is asked who it is before a
client connects, so that anything but a Dask scheduler answering in time is one line."""
from __future__ import annotations

import signal
import threading

from treedyn.pipeline.errors import UsageError

EXTRA = "--scheduler needs the optional extra: pip install 'treedyn[dask]'"


CONNECT_SECONDS = 30  # --scheduler tcp://...: connecting and the scheduler's first answer


def require_dask():
    """The dask.distributed module, or the one-line error naming the optional extra."""
    try:
        import distributed
    except ImportError:
        raise UsageError(EXTRA) from None
    return distributed


def connect(address: str):
    """A dask.distributed Client for ``address`` ('local': a LocalCluster here).

    The dyn program lets SIGPIPE end it quietly when its stdout reader goes away; with
    sockets to a cluster, a peer closing a connection must be an error the client handles,
    not the end of dyn, so SIGPIPE is ignored again (Python's default) from here on.
    Distributed's own log lines are silenced: what goes wrong is dyn's one line.

    A tcp address is first asked who it is (distributed's ``identity`` call), the
    connection and the answer bounded by :data:`CONNECT_SECONDS` in all: anything but a
    Dask scheduler answering in time (a closed port, an HTTP server such as the dashboard's
    port, a service that greets first) is one line, exit 2, not a hang or a MemoryError.
    """
    if hasattr(signal, "SIGPIPE") and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    distributed = require_dask()
    quiet_logs()
    if address == "local":
        return local_cluster(distributed)
    check_scheduler(address)
    try:
        return distributed.Client(address, timeout=f"{CONNECT_SECONDS}s"), None
    except Exception as error:  # noqa: BLE001 -- any failure to connect is the user's address
        raise UsageError(not_a_scheduler(address, error)) from None


def quiet_logs() -> None:
    """Silence the log records of distributed in this process (a lost scheduler logs ~30
    lines of errors and tracebacks; dyn reports it in one line)."""
    import logging

    for name in ["distributed", *logging.root.manager.loggerDict]:
        if name == "distributed" or name.startswith("distributed."):
            logging.getLogger(name).setLevel(logging.CRITICAL)


def local_cluster(distributed):
    """A LocalCluster of 2 single-threaded worker processes, and its Client.

    Its scheduler's HTTP server (distributed always starts one) listens on a free port of
    127.0.0.1, with no dashboard: port 8787 taken by another cluster is no warning. A
    terminal's Ctrl-C goes to the whole process group, the worker processes too, which
    would print tracebacks: they are started with SIGINT ignored (inherited), so only dyn
    takes it, cleans up and closes them. The price: a Ctrl-C in the seconds the cluster
    takes to start (SIGINT ignored here too) is lost; press it again once it runs.
    """
    import logging

    ignoring = threading.current_thread() is threading.main_thread()
    saved = signal.signal(signal.SIGINT, signal.SIG_IGN) if ignoring else None
    cluster = client = None
    try:
        cluster = distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
            scheduler_kwargs={"dashboard_address": "127.0.0.1:0"},
            silence_logs=logging.CRITICAL)
        client = distributed.Client(cluster)
    except BaseException:
        if client is not None:
            client.close()
        if cluster is not None:
            cluster.close()
        raise
    finally:
        if ignoring:
            signal.signal(signal.SIGINT, saved)
    return client, cluster


def check_scheduler(address: str) -> None:
    """A one-line UsageError unless the tcp ``address`` answers as a Dask scheduler within
    :data:`CONNECT_SECONDS` (other protocols go straight to the Client)."""
    import asyncio

    from distributed.comm import parse_address
    from distributed.core import rpc

    try:
        scheme = parse_address(address)[0]
    except ValueError as error:
        raise UsageError(not_a_scheduler(address, error)) from None
    if scheme != "tcp":
        return
    reach(address)

    async def identity():
        remote = rpc(address, timeout=CONNECT_SECONDS)
        try:
            return await remote.identity()
        finally:
            await remote.close_rpc()

    try:
        answer = asyncio.run(asyncio.wait_for(identity(), CONNECT_SECONDS))
    except Exception as error:  # noqa: BLE001 -- a MemoryError too: a banner read as a size
        raise UsageError(not_a_scheduler(address, error)) from None
    kind = answer.get("type") if isinstance(answer, dict) else None
    if kind != "Scheduler":
        raise UsageError(not_a_scheduler(address, f"it answered as {kind or 'something else'}"))


def reach(address: str) -> None:
    """A one-line UsageError when nothing listens at the tcp ``address`` (a refused
    connection or an unknown host is known at once; distributed's own connect would retry
    it for :data:`CONNECT_SECONDS`)."""
    import socket

    from distributed.comm import parse_host_port

    try:
        host, port = parse_host_port(address.removeprefix("tcp://"))
        socket.create_connection((host, port), timeout=CONNECT_SECONDS).close()
    except (OSError, ValueError) as error:
        raise UsageError(not_a_scheduler(address, error)) from None


def not_a_scheduler(address: str, error) -> str:
    """The one line for an address that gave no Dask scheduler (``error``: why)."""
    import asyncio

    if isinstance(error, (asyncio.TimeoutError, TimeoutError)):
        error = f"no answer in {CONNECT_SECONDS} s"
    elif isinstance(error, ConnectionRefusedError):
        error = "connection refused"
    detail = " ".join(str(error).split()) or type(error).__name__
    return f"{address}: not a Dask scheduler, or not answering ({detail})"
