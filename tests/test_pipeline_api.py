"""The pipeline as a library: states streamed from files through the engine from Python,
as docs/api.md shows (its example is executed here), held to the engine's own results."""
import json
import os
import re
from pathlib import Path

import numpy as np
import pytest

from treedyn import pipeline
from treedyn.engine import aba, crba, rnea
from treedyn.engine.centroidal import centroidal_momentum
from treedyn.engine.coriolis import coriolis
from treedyn.engine.energy import energy
from treedyn.engine.named import center_of_mass
from treedyn.parsers import load_model

ROOT = Path(__file__).resolve().parents[1]
ARM = ROOT / "fixtures" / "two_link_arm.urdf"


def test_the_api_docs_stream_a_parquet_log_through_inverse(tmp_path, monkeypatch):
    pytest.importorskip("pyarrow")
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "docs" / "api.md").read_text(), re.S)
    streaming = [block for block in blocks if "pipeline.run(" in block]
    assert len(streaming) == 1
    (tmp_path / "fixtures").symlink_to(ROOT / "fixtures")
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    exec(compile(streaming[0], "docs/api.md", "exec"), namespace)  # noqa: S102 -- our docs
    assert namespace["sink"].count == 1000
    model = namespace["model"]
    expected = rnea(model, namespace["q"], namespace["v"], namespace["a"])
    np.testing.assert_allclose(namespace["tau"], expected, rtol=1e-13, atol=1e-13)


def test_every_computation_of_the_table_streams_as_the_engine_computes(tmp_path):
    model = load_model(str(ARM))
    rng = np.random.default_rng(5)
    q, v, a, tau = (rng.normal(size=(50, 2)) for _ in range(4))
    np.savez(tmp_path / "states.npz", q=q, v=v, a=a, tau=tau)
    _, c, Jcom = center_of_mass(model, q)
    Ag, hg, Ig = centroidal_momentum(model, q, v)
    expected = {"inverse": rnea(model, q, v, a), "forward": aba(model, q, v, tau),
                "mass": crba(model, q), "com": np.concatenate([c[:, :, None], Jcom], axis=2),
                "coriolis": coriolis(model, q, v),
                "centroidal": np.concatenate([Ag, hg[:, :, None], Ig], axis=2),
                "energy": energy(model, q, v)}
    # (the rows made for named frames, "frames[...]", are pipeline.kinematics's)
    assert set(pipeline.COMPUTATIONS) == set(expected) | {"com"}  # (com: tests/test_kinematics_cli.py)
    for command, result in expected.items():
        key = pipeline.COMPUTATIONS[command].key
        out = tmp_path / f"{command}.jsonl"
        with pytest.warns(pipeline.StatesWarning, match="not read"):  # (one array unused)
            sink = pipeline.run(model, command, tmp_path / "states.npz", out, chunk=7)
        assert sink.count == 50
        rows = [json.loads(line)[key] for line in out.read_text().splitlines()]
        np.testing.assert_allclose(rows, result, rtol=1e-13, atol=1e-13)


def test_a_bad_row_raises_naming_the_line_and_keeps_the_states_before(tmp_path):
    model = load_model(str(ARM))
    lines = ["q0,q1,v0,v1,a0,a1"] + [",".join(["0.1"] * 6)] * 4 + ["0.1,0.1,x,0,0,0"]
    (tmp_path / "log.csv").write_text("\n".join(lines) + "\n")
    out = tmp_path / "tau.csv"
    out.write_text("previous\n")
    with pytest.raises(pipeline.UsageError, match=r"log\.csv:6: column 'v0'"):
        pipeline.run(model, "inverse", tmp_path / "log.csv", out, chunk=2)
    assert out.read_text() == "previous\n"  # the output is as it was ...
    kept = (tmp_path / "tau.partial.csv").read_text().splitlines()
    assert len(kept) == 1 + 4  # ... and the four states before the bad row are kept
    np.testing.assert_allclose([float(x) for x in kept[1].split(",")],
                               rnea(model, np.full(2, 0.1), np.full(2, 0.1), np.full(2, 0.1)),
                               rtol=1e-15)


def test_the_library_reads_no_environment_for_its_chunks(tmp_path, monkeypatch):
    monkeypatch.setenv("TREEDYN_STREAM_CHUNK", "1")
    model = load_model(str(ARM))
    np.savez(tmp_path / "s.npz", q=np.zeros((40, 2)), v=np.zeros((40, 2)), a=np.zeros((40, 2)))
    calls = []
    sink = pipeline.run(model, "inverse", str(tmp_path / "s.npz"), os.fspath(tmp_path / "t.npz"),
                        progress=lambda states, total, share: calls.append(states))
    assert calls == [40] and sink.count == 40


def test_a_row_made_for_named_frames_streams_without_growing_the_table(tmp_path):
    """``frames`` and ``jacobian`` depend on the frames asked: their rows are made per call
    and passed to run() as they are; the table of computations stays as it is."""
    from treedyn.engine.named import frame_jacobians, frame_set
    from treedyn.pipeline.kinematics import kinematics

    model = load_model(str(ARM))
    q = np.random.default_rng(2).normal(size=(20, 2))
    np.savez(tmp_path / "q.npz", q=q)
    rows = set(pipeline.COMPUTATIONS)
    frames = frame_set(model, ["link2"])
    for reference in ("LOCAL", "WORLD"):
        row = kinematics("jacobian", frames, reference)
        out = tmp_path / f"J_{reference}.npz"
        assert pipeline.run(model, row, tmp_path / "q.npz", out, chunk=6).count == 20
        np.testing.assert_allclose(np.load(out)["J"], frame_jacobians(model, q, frames,
                                                                      reference)[:, 0],
                                   rtol=1e-13, atol=1e-13)
    assert set(pipeline.COMPUTATIONS) == rows
