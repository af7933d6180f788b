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
from treedyn.pipeline.errors import StatesWarning  # noqa: E402
from treedyn.pipeline.regression import identify_stream  # noqa: E402

ARM = "fixtures/two_link_arm.urdf"
# a log of positions says once what was estimated (held by the test of it)
pytestmark = pytest.mark.filterwarnings("ignore:.*estimated from q:UserWarning")


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
    several = identify_stream(arm, paths, chunk=150, weights="none")
    one = identify_stream(arm, tmp_path / "all.npz", chunk=150, weights="none")
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


# ------------------------------------------------------------------ logs of positions only
RATE = 1000.0  # Hz
QUANTUM = 2.0 ** -17  # rad: a 17-bit encoder's step


def fourier(nv, t, seed, harmonics=5, fundamental=0.1):
    """q, v, a (N, nv) of a finite Fourier series (an excitation trajectory)."""
    rng = np.random.default_rng(seed)
    w = 2 * np.pi * fundamental * np.arange(1, harmonics + 1)
    A, B = (rng.normal(size=(harmonics, nv)) * 0.5 / np.arange(1, harmonics + 1)[:, None]
            for _ in range(2))
    s, c = np.sin(np.outer(t, w)), np.cos(np.outer(t, w))
    return s @ A + c @ B, (c * w) @ A - (s * w) @ B, -(s * w * w) @ A - (c * w * w) @ B


def test_streamed_filter_equals_the_whole_log_filter():
    """The zero-phase filter over chunks with overlap equals scipy's sosfiltfilt of the
    whole array, ends included, whatever the chunks."""
    import scipy.signal

    from treedyn.engine.analysis.lowpass import ZeroPhase, design

    x = np.cumsum(np.random.default_rng(8).normal(size=(9000, 3)), axis=0)
    sos = design(15.0, RATE)
    whole = scipy.signal.sosfiltfilt(sos, x, axis=0)
    for step, block in ((700, 1000), (4096, 4096), (9000, 64)):
        stream, parts, starts = ZeroPhase(sos, 1, block), [], []
        for s in range(0, len(x), step):
            for fx, extra, lo, hi, start in stream.push(x[s:s + step], np.arange(s, s + len(x[s:s + step]))):
                parts.append(fx[lo:hi])
                starts.append(extra[lo:hi])
        for fx, extra, lo, hi, start in stream.finish():
            parts.append(fx[lo:hi])
            starts.append(extra[lo:hi])
        np.testing.assert_array_equal(np.concatenate(starts), np.arange(len(x)))
        np.testing.assert_allclose(np.concatenate(parts), whole, rtol=0,
                                   atol=1e-12 * np.abs(x).max())  # (the docs: 1e-13)


@pytest.fixture(scope="module")
def positions_log(arm, tmp_path_factory):
    """A 1 kHz log of quantised q, t and noisy tau (20 s), and a held-out one with its
    true v, a; the noise level."""
    folder = tmp_path_factory.mktemp("positions")
    t = np.arange(20000) / RATE
    noise, rng = 0.05, np.random.default_rng(9)
    logs = {}
    for name, seed in (("train", 1), ("held", 2)):
        q, v, a = fourier(arm.nv, t, seed)
        tau = rnea(arm, q, v, a) + noise * rng.normal(size=q.shape)
        logs[name] = {"q": np.round(q / QUANTUM) * QUANTUM, "t": t, "tau": tau,
                      "v": v, "a": a, "exact_q": q}
    path = folder / "positions.npz"
    np.savez(path, **{key: logs["train"][key] for key in ("q", "t", "tau")})
    return path, logs, noise


def test_positions_only_log_recovers_the_parameters(arm, positions_log):
    """v and a estimated from quantised q at 1 kHz: the fitted parameters predict a
    held-out log's torques (Pinocchio's regressor at its true q, v, a) to within 5 % of the
    torque noise."""
    path, logs, noise = positions_log
    with pytest.warns(StatesWarning, match="v and a estimated from q at 1000 Hz: Butterworth "
                      "order 4, zero phase .* cut-off 20 Hz; tau and the regressor"):
        result = identify_stream(arm, path)
    held = logs["held"]
    Y = pinocchio_regressor(held["exact_q"], held["v"], held["a"])
    rms = np.sqrt(np.mean((Y @ result.ols.full(result.base) - held["tau"]) ** 2, axis=0))
    assert np.all(np.abs(rms - noise) <= 0.05 * noise), rms
    assert result.logs[0]["estimated"]["cutoff"] == 20.0
    assert result.logs[0]["estimated"]["rate"] == pytest.approx(RATE)


def test_positions_only_csv_and_jsonl_equal_npz(arm, positions_log, tmp_path):
    """The time column t of a CSV file (and of a Parquet file's columns), the key "t" of
    JSON Lines and an HDF5 dataset t (N,) read as the .npz array t: the same fit."""
    import h5py
    import pandas
    _, logs, _ = positions_log
    log = {key: logs["train"][key][:3000] for key in ("q", "t", "tau")}
    np.savez(tmp_path / "p.npz", **log)
    header = "t,q0,q1,tau0,tau1"
    rows = np.column_stack([log["t"], log["q"], log["tau"]])
    np.savetxt(tmp_path / "p.csv", rows, delimiter=",", header=header, comments="", fmt="%.17g")
    with open(tmp_path / "p.jsonl", "w") as out:
        for t, q, tau in zip(log["t"], log["q"], log["tau"]):
            out.write(json.dumps({"t": float(t), "q": q.tolist(), "tau": tau.tolist()}) + "\n")
    with h5py.File(tmp_path / "p.h5", "w") as out:
        for key, values in log.items():
            out[key] = values
    pandas.DataFrame(rows, columns=header.split(",")).to_parquet(tmp_path / "p.parquet")
    fits = [identify_stream(arm, tmp_path / f"p.{kind}", chunk=700)
            for kind in ("npz", "csv", "jsonl", "h5", "parquet")]
    for fit in fits[1:]:
        np.testing.assert_allclose(fit.ols.base, fits[0].ols.base, rtol=1e-12, atol=1e-15)
        assert fit.problem.states == fits[0].problem.states


def refused(capsys, *args):
    code, out, err = dyn("identify", ARM, *args, capsys=capsys)
    assert code == 2 and out == "" and err.count("\n") == 1, (code, err)
    assert "Traceback" not in err
    return err


def test_degenerate_position_logs_are_one_line(arm, tmp_path, capsys):
    """Constant q, a log too short for the filter, a NaN, uneven times, no time column:
    one line each, exit 2."""
    t = np.arange(3000) / RATE
    q, v, a = fourier(arm.nv, t, 4)
    tau = rnea(arm, q, v, a)
    cases = {
        "constant": dict(q=np.ones_like(q), t=t, tau=tau[:1].repeat(len(t), 0)),
        "short": dict(q=q[:200], t=t[:200], tau=tau[:200]),
        "nan": dict(q=np.where(np.arange(3000)[:, None] == 2500, np.nan, q), t=t, tau=tau),
        "uneven": dict(q=q, t=t + (np.arange(3000) == 1200) * 2e-4, tau=tau),
        "untimed": dict(q=q, tau=tau),
    }
    said = {}
    for name, arrays in cases.items():
        np.savez(tmp_path / f"{name}.npz", **arrays)
        said[name] = refused(capsys, "--input", str(tmp_path / f"{name}.npz"))
    assert "the same in all" in said["constant"]
    assert "too short for the filter" in said["short"]
    assert "q[2500]" in said["nan"]
    assert "state 1200" in said["uneven"] and "1%" in said["uneven"]
    assert "no v" in said["untimed"] and "times t" in said["untimed"]


# ------------------------------------------------------------------------ per-joint weights
def test_weights_follow_each_joints_noise(arm, tmp_path):
    """Torque noise ten times larger on joint1 than on joint2: each joint's sigma is found
    (to 5 %), and the weighted fit's base parameters are nearer the planted ones than the
    unweighted fit's, on each of three logs (errors in units of the weighted fit's
    standard deviations, whose squares sum to about 6 for it, the rank, and to tens for
    the unweighted fit, whose link2 parameters take joint1's noise); %std is
    100 std / |value|."""
    from treedyn.engine.analysis.identify_report import report
    from treedyn.engine.regressor import layout_of, model_parameters

    planted = model_parameters(arm, layout_of(arm))
    for seed in range(3):
        rng = np.random.default_rng(20 + seed)
        q, v, a = (rng.normal(size=(1500, arm.nv)) for _ in range(3))
        sigma = np.array([0.3, 0.03])
        tau = rnea(arm, q, v, a) + sigma * rng.normal(size=q.shape)
        path = tmp_path / f"w{seed}.npz"
        np.savez(path, q=q, v=v, a=a, tau=tau)
        weighted = identify_stream(arm, path)
        plain = identify_stream(arm, path, weights="none")
        np.testing.assert_allclose(weighted.joint_sigma, sigma, rtol=0.05)
        assert plain.joint_sigma is None
        error = [np.sum(((fit.ols.base - fit.base.project(planted)) / weighted.ols.std) ** 2)
                 for fit in (weighted, plain)]
        assert error[0] < 0.5 * error[1], error
        rows = report(weighted, ("joint1", "joint2"))["base"]
        np.testing.assert_allclose([row["relative_std"] for row in rows],
                                   100 * weighted.ols.std / np.abs(weighted.ols.base))


# ----------------------------------------------------------------------- a held-out log
def test_validate_file_is_a_held_out_log(arm, tmp_path, positions_log):
    """--validate FILE: the torque RMS per joint on that log, as numpy computes it from
    Pinocchio's regressor and the OLS parameters, and over the RMS of its torques; a log
    of positions is read with the same estimation."""
    from treedyn.engine.analysis.identify_report import report

    train, held = random_logs(arm, (0.05, 0.05), 800, 11)
    for name, log in (("train", train), ("held", held)):
        np.savez(tmp_path / f"{name}.npz", **log)
    result = identify_stream(arm, tmp_path / "train.npz", validate=tmp_path / "held.npz")
    residuals = report(result, ("joint1", "joint2"))["residuals"]
    Y = pinocchio_regressor(held["q"], held["v"], held["a"])
    rms = np.sqrt(np.mean((Y @ result.ols.full(result.base) - held["tau"]) ** 2, axis=0))
    np.testing.assert_allclose(residuals["validate"]["ols"], rms, rtol=1e-9)
    np.testing.assert_allclose(residuals["validate_normalised"]["ols"],
                               rms / np.sqrt(np.mean(held["tau"] ** 2, axis=0)), rtol=1e-9)
    assert result.problem.validate_states == 800 and result.problem.states == 800
    path, logs, _ = positions_log
    np.savez(tmp_path / "held_positions.npz",
             **{key: logs["held"][key] for key in ("q", "t", "tau")})
    estimated = identify_stream(arm, path, validate=tmp_path / "held_positions.npz")
    assert estimated.problem.validate_states == estimated.problem.states
    normalised = report(estimated, ("joint1", "joint2"))["residuals"]["validate_normalised"]
    assert np.all(normalised["ols"] < 0.01), normalised
