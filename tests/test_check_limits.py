"""``dyn check-limits``: positions, velocities and joint forces of a logged motion against
the model's limits, with violations planted at known states in every input format, the
torques of inverse dynamics when the log has none, a log in degrees, exit codes, and a
large log streamed in bounded memory."""
from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
import textwrap
import warnings
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest

from treedyn.engine import rnea
from treedyn.parsers import load_model
from treedyn.pipeline.trajectory import write_states
from treedyn.pipeline.compute import EFFORT
from treedyn.pipeline.errors import StatesWarning
from treedyn.pipeline.layout import DEGREE, Layout
from treedyn.pipeline.sinks import LimitsSink
from treedyn.pipeline.stream import run

from test_cli import assert_usage_error, dyn

ROOT = Path(__file__).resolve().parents[1]
ARM = ROOT / "fixtures" / "two_link_arm.urdf"
PI = 3.14159265358979  # the arm's position limits, +-; effort 100 N m, velocity 10 rad/s
N = 1000


@lru_cache(maxsize=None)
def arm():
    return load_model(str(ARM))


def planted() -> tuple[dict, dict]:
    """A motion of N states inside the arm's limits but for the planted states, and what
    the check must find: (dof, kind) -> (first, count, worst, value there, excess)."""
    rng = np.random.default_rng(7)
    q, v = rng.uniform(-2, 2, (N, 2)), rng.uniform(-5, 5, (N, 2))
    a, tau = rng.uniform(-1, 1, (N, 2)), rng.uniform(-50, 50, (N, 2))
    q[17, 0], q[400, 0], q[401, 0] = 3.2, 3.5, -3.3
    v[5, 1], v[600, 1] = 12.0, -15.0
    tau[250, 0], tau[251, 0], tau[999, 1] = 150.0, -101.0, 100.5
    expected = {("joint1", "position"): (17, 3, 400, 3.5, 3.5 - PI),
                ("joint2", "velocity"): (5, 2, 600, -15.0, 5.0),
                ("joint1", "effort"): (250, 2, 250, 150.0, 50.0),
                ("joint2", "effort"): (999, 1, 999, 100.5, 0.5)}
    return {"q": q, "v": v, "a": a, "tau": tau}, expected


def check(document: dict, expected: dict, where) -> None:
    """Every (dof, kind) of ``document`` as ``expected`` says (others: no state outside);
    ``where(k)``: where state k of the log is."""
    assert document["states"] == N
    states = {s for first, _, worst, _, _ in expected.values() for s in (first, worst)}
    offending = {17, 400, 401, 5, 600, 250, 251, 999}
    assert document["offending_states"] == len(offending) and not document["ok"]
    assert states <= offending
    seen = set()
    for entry in document["joints"]:
        for kind in ("position", "velocity", "effort"):
            found = entry[kind]
            key = (entry["dof"], kind)
            if key not in expected:
                assert found["count"] == 0 and found["first"] is None, key
                continue
            seen.add(key)
            first, count, worst, value, excess = expected[key]
            assert found["count"] == count, key
            assert found["first"]["state"] == first and found["first"]["where"] == where(first)
            assert found["worst"]["state"] == worst and found["worst"]["where"] == where(worst)
            assert found["worst"]["value"] == value
            assert found["worst"]["excess"] == pytest.approx(excess, rel=1e-15)
    assert seen == set(expected)


def write_parquet(path: Path, vectors: dict) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({kind: pa.array(values.tolist(), type=pa.list_(pa.float64()))
                             for kind, values in vectors.items()}), path)


def summary(log: Path, degrees: bool = False, model=None, chunk: int = 64) -> dict:
    """The pipeline's summary of ``log`` (in chunks of ``chunk`` states)."""
    layout = Layout.of(model or arm(), degrees)
    sink = LimitsSink(None, layout, {"model": "arm", "input": str(log)})
    run(layout, EFFORT, log, sink, chunk=chunk)
    return sink.document()


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "npz", "parquet"])
def test_planted_violations_are_found_in_every_format(tmp_path, fmt):
    vectors, expected = planted()
    log = tmp_path / f"log.{fmt}"
    if fmt == "parquet":
        write_parquet(log, vectors)
    else:
        write_states(str(log), vectors)
    where = {"csv": lambda k: f"{log}:{k + 2}", "jsonl": lambda k: f"{log}:{k + 1}"}.get(
        fmt, lambda k: f"{log}: state {k}")
    document = summary(log)
    check(document, expected, where)
    assert document["tau"] == "log" and document["checked"] == ["position", "velocity",
                                                                 "effort"]
    limits = {entry["dof"]: entry for entry in document["joints"]}
    assert limits["joint1"]["position"]["upper"] == PI
    assert limits["joint2"]["velocity"]["lower"] == -10.0
    assert limits["joint2"]["effort"]["unit"] == "N m"


def test_the_command_writes_one_document_and_exits_1(tmp_path):
    vectors, expected = planted()
    log = tmp_path / "log.csv"
    write_states(str(log), vectors)
    out = tmp_path / "limits.json"
    result = dyn("check-limits", ARM, "--input", log, "--output", out, check=False)
    assert result.returncode == 1 and result.stdout == b""
    check(json.loads(out.read_text()), expected, lambda k: f"{log}:{k + 2}")
    on_stdout = dyn("check-limits", ARM, "--input", log, "--format", "json", check=False)
    assert on_stdout.returncode == 1
    assert json.loads(on_stdout.stdout) == json.loads(out.read_text())
    table = dyn("check-limits", ARM, "--input", log, "--format", "table", check=False)
    assert table.returncode == 1
    assert "8 of 1000 states outside a limit" in table.stdout.decode()


def test_a_clean_log_exits_0(tmp_path):
    vectors, _ = planted()
    clean = {kind: np.clip(values, -2, 2) for kind, values in vectors.items()}
    log = tmp_path / "log.npz"
    np.savez(log, **clean)
    document = json.loads(dyn("check-limits", ARM, "--input", log).stdout)
    assert document["ok"] and document["offending_states"] == 0 and document["states"] == N
    assert all(entry[kind]["count"] == 0 for entry in document["joints"]
               for kind in ("position", "velocity", "effort"))


def test_without_tau_the_efforts_are_inverse_dynamics(tmp_path):
    vectors, _ = planted()
    q, v, a = vectors["q"], vectors["v"], 60 * vectors["a"]  # (large enough to pass 100 N m)
    np.savez(tmp_path / "log.npz", q=q, v=v, a=a)
    np.savez(tmp_path / "no_a.npz", q=q, v=v)
    for name, tau, source in (("log.npz", rnea(arm(), q, v, a), "inverse dynamics"),
                              ("no_a.npz", rnea(arm(), q, v, 0 * a), "inverse dynamics (a = 0)")):
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            document = summary(tmp_path / name)
        assert [str(w.message) for w in said] == ([] if name == "log.npz" else [
            f"{tmp_path / name}: no a in the log: the effort limits are checked on inverse "
            "dynamics with a = 0"])
        assert document["tau"] == source
        excess = np.abs(tau) - 100.0
        for c, entry in enumerate(document["joints"]):
            found = entry["effort"]
            assert found["count"] == int((excess[:, c] > 0).sum())
            if found["count"]:
                assert found["first"]["state"] == int(np.argmax(excess[:, c] > 0))
                assert found["worst"]["state"] == int(np.argmax(excess[:, c]))
                assert found["worst"]["value"] == pytest.approx(
                    tau[found["worst"]["state"], c], rel=1e-12)
    assert summary(tmp_path / "log.npz")["joints"][0]["effort"]["count"] > 0
    np.savez(tmp_path / "q.npz", q=q)
    with pytest.warns(StatesWarning) as said:
        document = summary(tmp_path / "q.npz")
    assert document["checked"] == ["position", "effort"]
    assert document["tau"] == "inverse dynamics (v = a = 0)"
    assert {str(w.message).partition(": ")[2] for w in said} == {
        "no v or a in the log: the effort limits are checked on inverse dynamics with "
        "v = a = 0", "no v in the log: velocity limits are not checked"}
    result = dyn("check-limits", ARM, "--input", tmp_path / "no_a.npz", check=False)
    assert "no a in the log: the effort limits are checked on inverse dynamics with a = 0" \
        in result.stderr.decode()


def test_a_log_in_degrees_is_compared_in_degrees(tmp_path):
    q = np.array([[30.0, 0.0], [181.0, -179.0], [-185.0, 90.0], [0.0, 0.0]])
    v = np.array([[0.0, 0.0], [0.0, 570.0], [0.0, -600.0], [0.0, 0.0]])
    log = tmp_path / "deg.csv"
    write_states(str(log), {"q": q, "v": v})
    with pytest.warns(StatesWarning, match="no a in the log"):
        document = summary(log, degrees=True)
    limit = PI / DEGREE  # 179.99999999999983 degrees
    joint1, joint2 = document["joints"]
    assert joint1["position"]["unit"] == "deg" and joint2["velocity"]["unit"] == "deg/s"
    assert joint1["position"]["upper"] == pytest.approx(limit, rel=1e-15)
    assert joint1["position"]["count"] == 2 and joint2["position"]["count"] == 0
    assert joint1["position"]["worst"]["state"] == 2
    assert joint1["position"]["worst"]["value"] == pytest.approx(-185.0, rel=1e-15)
    assert joint1["position"]["worst"]["excess"] == pytest.approx(185.0 - limit, rel=1e-12)
    assert joint2["velocity"]["count"] == 1  # 570 deg/s is within 10 rad/s (572.96 deg/s)
    assert joint2["velocity"]["worst"]["excess"] == pytest.approx(600.0 - 10 / DEGREE,
                                                                  rel=1e-12)


def test_the_api_docs_check_the_parquet_log_of_their_streaming_example(tmp_path, monkeypatch):
    pytest.importorskip("pyarrow")
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "docs" / "api.md").read_text(), re.S)
    (streaming,) = [block for block in blocks if "pipeline.run(" in block]
    (limits,) = [block for block in blocks if "LimitsSink(" in block]
    (tmp_path / "fixtures").symlink_to(ROOT / "fixtures")
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    for block in (streaming, limits):
        exec(compile(block, "docs/api.md", "exec"), namespace)  # noqa: S102 -- our docs
    document = namespace["sink"].document()
    model, q, v, a = (namespace[name] for name in ("model", "q", "v", "a"))
    tau = rnea(model, q, v, a)
    outside = (np.abs(q) > PI) | (np.abs(v) > 10) | (np.abs(tau) > 100)
    assert document["offending_states"] == int(outside.any(axis=1).sum()) == 3
    assert document["tau"] == "inverse dynamics" and not namespace["sink"].summary.ok


CONTINUOUS = """<robot name="wheel">
  <link name="base"/>
  <joint name="spin" type="continuous">
    <parent link="base"/><child link="wheel"/><axis xyz="0 0 1"/>
    <limit lower="-1" upper="1" effort="5" velocity="2"/>
  </joint>
  <link name="wheel">
    <inertial><mass value="1"/><inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0"
      izz="0.1"/></inertial>
  </link>
</robot>
"""


def test_continuous_joints_have_no_position_limits(tmp_path):
    (tmp_path / "wheel.urdf").write_text(CONTINUOUS)
    np.savez(tmp_path / "log.npz", q=np.array([[0.0], [100.0], [-7.0]]),
             v=np.array([[0.0], [1.0], [3.0]]))
    with pytest.warns(StatesWarning, match="no a in the log"):
        document = summary(tmp_path / "log.npz", model=load_model(str(tmp_path / "wheel.urdf")))
    (entry,) = document["joints"]
    assert entry["position"] is None
    assert entry["velocity"]["count"] == 1 and entry["velocity"]["first"]["state"] == 2


def test_bad_input_exits_2_and_a_stopped_run_keeps_the_summary_before(tmp_path):
    vectors, _ = planted()
    log = tmp_path / "log.csv"
    write_states(str(log), {kind: values[:30] for kind, values in vectors.items()})
    lines = log.read_text().splitlines()
    lines[25] = lines[25].replace(lines[25].split(",")[2], "x", 1)
    log.write_text("\n".join(lines) + "\n")
    assert_usage_error(dyn("check-limits", ARM, "--input", log, check=False), f"{log}:26",
                       "nothing is written to stdout")
    out = tmp_path / "limits.json"
    assert_usage_error(dyn("check-limits", ARM, "--input", log, "-o", out, check=False),
                       "limits.partial.json")
    kept = json.loads((tmp_path / "limits.partial.json").read_text())
    assert kept["states"] == 24 and not out.exists()
    assert kept["joints"][0]["position"]["first"]["state"] == 17
    assert_usage_error(dyn("check-limits", ARM, "--input", log, "-o", tmp_path / "l.csv",
                           check=False), "one JSON document")


def chain_urdf(size: int) -> str:
    """A chain of ``size`` revolute joints with position, effort and velocity limits."""
    links = ['<link name="l0"/>']
    for k in range(1, size + 1):
        links.append(textwrap.dedent(f"""\
            <joint name="j{k}" type="revolute"><parent link="l{k - 1}"/><child link="l{k}"/>
              <origin xyz="0 0 0.1"/><axis xyz="0 1 0"/>
              <limit lower="-2" upper="2" effort="50" velocity="3"/></joint>
            <link name="l{k}"><inertial><mass value="1"/><inertia ixx="0.01" ixy="0"
              ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial></link>"""))
    return '<robot name="chain">' + "\n".join(links) + "</robot>\n"


BOUNDED = """
import resource, sys
import treedyn.cli.commands.check_limits as command
from treedyn.cli.app import run

def load(*args, **options):  # the model loaded (its file read), then the limit set
    model = loaded(*args, **options)
    size = next(int(line.split()[1]) for line in open("/proc/self/status")
                if line.startswith("VmSize:")) * 1024
    limit = size + (80 << 20)  # what is mapped now, and 80 MB more
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    return model

loaded, command.load = command.load, load
run(sys.argv[1:])
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_large_log_streams_in_bounded_memory(tmp_path):
    """300 000 states of a 12-dof chain, 86 MB of q, v and tau, checked in a process
    allowed 80 MB more address space than it has mapped once the model is loaded: the
    log's arrays alone would not fit, one chunk at a time does."""
    size, count = 12, 300_000
    (tmp_path / "chain.urdf").write_text(chain_urdf(size))
    q = np.tile(np.random.default_rng(3).uniform(-1, 1, (1000, size)), (count // 1000, 1))
    v, tau = 2 * q, 40 * q
    q[123_456, 7] = 2.5
    tau[299_999, 11] = -51.0
    np.savez(tmp_path / "log.npz", q=q, v=v, tau=tau)
    del q, v, tau
    result = subprocess.run(
        [sys.executable, "-c", BOUNDED, "check-limits", str(tmp_path / "chain.urdf"),
         "--input", str(tmp_path / "log.npz"), "--format", "json"],
        capture_output=True, timeout=60, env={**os.environ, "OPENBLAS_NUM_THREADS": "1"})
    assert result.returncode == 1, result.stderr.decode()
    document = json.loads(result.stdout)
    assert document["states"] == count and document["offending_states"] == 2
    assert document["joints"][7]["position"]["first"]["state"] == 123_456
    assert document["joints"][11]["effort"]["worst"]["excess"] == 1.0
    assert math.isclose(document["joints"][7]["position"]["worst"]["excess"], 0.5)
