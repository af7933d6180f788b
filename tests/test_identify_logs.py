"""Identification from real logs (treedyn.pipeline.regression.identify_stream, ``dyn
identify``): several logs, each its own trajectory.

Reference: Pinocchio's computeJointTorqueRegressor over every state and numpy's least
squares; the logs are the two-link arm's inverse dynamics with Gaussian torque noise.
"""
from __future__ import annotations

import json
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from treedyn.cli.app import run  # noqa: E402
from treedyn.engine import rnea  # noqa: E402
from treedyn.parsers import load_model  # noqa: E402
from treedyn.pipeline.regression import identify_stream  # noqa: E402

ARM = "fixtures/two_link_arm.urdf"


def dyn(*args, capsys):
    with pytest.raises(SystemExit) as ended:
        run(list(args))
    out, err = capsys.readouterr()
    return ended.value.code, out, err


@pytest.fixture(scope="module")
def arm():
    return load_model(ARM)


def pinocchio_regressor(q, v, a):
    """Y (N, nv, P) of the arm by Pinocchio, state by state."""
    pin = pytest.importorskip("pinocchio")
    model = pin.buildModelFromUrdf(ARM)
    data = model.createData()
    return np.array([pin.computeJointTorqueRegressor(model, data, *state)
                     for state in zip(q, v, a)])


def random_logs(model, noises, count, seed):
    """One log (q, v, a, tau) per noise level: random states, tau with that noise."""
    rng = np.random.default_rng(seed)
    logs = []
    for noise in noises:
        q, v, a = (rng.normal(size=(count, model.nv)) for _ in range(3))
        logs.append({"q": q, "v": v, "a": a,
                     "tau": rnea(model, q, v, a) + noise * rng.normal(size=q.shape)})
    return logs


def test_several_logs_are_one_concatenated_log(arm, tmp_path):
    """Three logs with different noise give the fit of their concatenation, each log's
    RMS per joint the residual of numpy's least squares on Pinocchio's regressor."""
    logs = random_logs(arm, (0.01, 0.05, 0.2), 400, 5)
    paths = []
    for k, log in enumerate(logs):
        paths.append(tmp_path / f"run{k}.npz")
        np.savez(paths[-1], **log)
    whole = {key: np.concatenate([log[key] for log in logs]) for key in logs[0]}
    np.savez(tmp_path / "all.npz", **whole)
    several = identify_stream(arm, paths, chunk=150)
    one = identify_stream(arm, tmp_path / "all.npz", chunk=150)
    np.testing.assert_allclose(several.ols.base, one.ols.base, rtol=1e-9, atol=1e-12)
    Y = pinocchio_regressor(whole["q"], whole["v"], whole["a"])
    theta = np.linalg.lstsq(Y.reshape(-1, Y.shape[2]), whole["tau"].ravel(), rcond=None)[0]
    residual = (Y @ theta - whole["tau"]).reshape(3, 400, arm.nv)
    from treedyn.engine.analysis.identify_report import report
    files = report(several, ("joint1", "joint2"))["files"]
    assert [f["file"] for f in files] == [str(p) for p in paths]
    assert [f["states"] for f in files] == [400] * 3
    np.testing.assert_allclose([f["rms"] for f in files],
                               np.sqrt(np.mean(residual ** 2, axis=1)), rtol=1e-8)


def test_inputs_repeat_and_expand_globs(arm, tmp_path, capsys):
    """--input repeats and takes quoted globs (sorted); a glob matching nothing is one
    line, exit 2."""
    logs = random_logs(arm, (0.02, 0.02), 300, 6)
    for k, log in enumerate(logs):
        np.savez(tmp_path / f"b{k}.npz", **log)
    np.savez(tmp_path / "a.npz", **random_logs(arm, (0.02,), 300, 7)[0])
    code, out, err = dyn("identify", ARM, "--input", str(tmp_path / "b*.npz"), "-i",
                         str(tmp_path / "a.npz"), "--format", "json", capsys=capsys)
    assert code == 0, err
    document = json.loads(out)
    assert [f["file"] for f in document["files"]] == [
        str(tmp_path / name) for name in ("b0.npz", "b1.npz", "a.npz")]
    assert document["states"]["train"] == 900
    code, out, err = dyn("identify", ARM, "--input", str(tmp_path / "c*.npz"), capsys=capsys)
    assert code == 2 and out == "" and err.count("\n") == 1 and "no file matches" in err
