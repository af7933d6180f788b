"""Excitation trajectories (treedyn.engine.excitation, ``dyn excite``).

Identities: the Fourier series' v and a are the time derivatives of its q (central
differences) and it is periodic; the optimised coefficients keep the position, velocity,
acceleration limits and the floor at every written state; on panda the base regressor's
condition number is at least 5x smaller than that of random Fourier coefficients of the same
bandwidth scaled to the same limits. The log written is read back by ``dyn identify``.
"""
from __future__ import annotations

import functools
import json
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from reference_models import robots_root  # noqa: E402
from treedyn.cli.app import run  # noqa: E402
from treedyn.engine import rnea  # noqa: E402
from treedyn.engine.batch.regressor import regressor  # noqa: E402
from treedyn.engine.analysis.identify import Accumulator, base_parameters  # noqa: E402
from treedyn.engine.excitation import (Excitation, excite, fourier_basis,  # noqa: E402
                                       random_start, random_states)
from treedyn.engine.named import frame_placements, frame_set  # noqa: E402
from treedyn.engine.regressor import layout_of, model_parameters  # noqa: E402
from treedyn.parsers import load_model  # noqa: E402

ROOT = robots_root()
PANDA = os.path.join(ROOT, "panda_description/urdf/panda.urdf") if ROOT else ""
ARM = "fixtures/two_link_arm.urdf"


def test_fourier_derivatives_and_period():
    rng = np.random.default_rng(1)
    period, L = 3.0, 4
    x = rng.normal(size=1 + 2 * L)
    t = np.linspace(0.0, period, 301)
    h = 1e-5
    q, v, a = (B @ x for B in fourier_basis(t, L, period))
    q_plus, v_plus, _ = (B @ x for B in fourier_basis(t + h, L, period))
    q_minus, v_minus, _ = (B @ x for B in fourier_basis(t - h, L, period))
    np.testing.assert_allclose((q_plus - q_minus) / (2 * h), v, rtol=0, atol=1e-8)
    np.testing.assert_allclose((v_plus - v_minus) / (2 * h), a, rtol=0, atol=1e-7)
    np.testing.assert_allclose(q[-1], q[0], atol=1e-12)  # periodic
    # the series as Swevers writes it, term by term
    w = 2 * np.pi / period
    direct = x[0] + sum(x[l] / (w * l) * np.sin(w * l * t) - x[L + l] / (w * l)
                        * np.cos(w * l * t) for l in range(1, L + 1))
    np.testing.assert_allclose(q, direct, rtol=0, atol=1e-12)


@functools.lru_cache(maxsize=1)
def panda_excitation():
    """(model, setting, trajectory, floor): panda's excitation, optimised once per module."""
    model = load_model(PANDA)
    floor = frame_set(model, ["panda_hand"])
    setting = Excitation(model, harmonics=2, period=10.0, samples=30, acceleration_limit=8.0,
                         floor=floor, heights=np.array([0.25]))
    times = np.arange(500) * 0.02
    return model, setting, excite(setting, seed=0, iterations=15, times=times), floor


@pytest.mark.skipif(not os.path.exists(PANDA), reason="example-robot-data is not installed")
def test_panda_condition_five_times_better_than_random_within_limits():
    model, setting, trajectory, floor = panda_excitation()
    times = np.arange(500) * 0.02
    random = [setting.condition(random_start(setting, np.random.default_rng(s)))
              for s in range(1, 6)]
    assert trajectory.condition * 5 <= np.median(random), (trajectory.condition, random)
    q, v, a = trajectory.states(times)
    moving = setting.dofs
    assert np.all(q[:, setting.coords] >= model.q_lower[setting.coords] - 1e-9)
    assert np.all(q[:, setting.coords] <= model.q_upper[setting.coords] + 1e-9)
    assert np.all(np.abs(v[:, moving]) <= model.velocity_limit[moving] + 1e-9)
    assert np.all(np.abs(a[:, moving]) <= 8.0 + 1e-9)
    assert frame_placements(model, q, floor)[1][:, 0, 2].min() >= 0.25 - 1e-9


@pytest.mark.skipif(not os.path.exists(PANDA), reason="example-robot-data is not installed")
def test_panda_excitation_identifies_planted_parameters_to_the_noise(tmp_path, capsys):
    """The excitation's log identifies panda's planted parameters (each body's ten scaled
    by its own factor in 0.7-1.3) from torques with 0.3 N m of noise: the OLS torques of a
    held-out log of another motion (random Fourier coefficients within the limits) are off
    by the noise alone, RMS within 5 % of 0.3 on every dof, as ordinary least squares on
    Pinocchio's regressor is in the issue's trial."""
    model, setting, trajectory, _ = panda_excitation()
    rng = np.random.default_rng(3)
    pi = model_parameters(model, layout_of(model))
    planted = pi * np.repeat(rng.uniform(0.7, 1.3, len(model.bodies)), 10)
    times = np.arange(2000) * 0.01  # 20 s at 100 Hz: two periods
    other = random_start(setting, np.random.default_rng(4))  # another motion, held out
    logs = []
    for name, (q, v, a) in (("train", trajectory.states(times)),
                            ("held", setting.states(other, fourier_basis(
                                times, setting.harmonics, setting.period)))):
        tau = regressor(model, q, v, a) @ planted + rng.normal(0.0, 0.3, (len(q), model.nv))
        path = tmp_path / f"{name}.npz"
        np.savez(path, q=q, v=v, a=a, tau=tau)
        logs.append(str(path))
    with pytest.raises(SystemExit) as ended:
        run(["identify", PANDA, "--input", logs[0], "--validate", logs[1], "--weights", "none",
             "--format", "json"])
    assert ended.value.code == 0
    held = json.loads(capsys.readouterr().out)["residuals"]["validate"]["ols"]
    np.testing.assert_allclose(held, 0.3, rtol=0.05)


def test_excite_writes_a_log_identify_reads(tmp_path, capsys):
    log = tmp_path / "log.npz"
    with pytest.raises(SystemExit) as ended:
        run(["excite", "fixtures/two_link_arm_heavier.urdf", "-o", str(log), "--period", "4",
             "--harmonics", "2", "--rate", "50", "--duration", "8", "--torques",
             "--iterations", "20"])
    assert ended.value.code == 0
    out = capsys.readouterr().out
    assert "400 states at 50 Hz over 8 s, 2 joints, 2 harmonics of 0.25 Hz" in out
    saved = np.load(log)
    np.testing.assert_allclose(np.diff(saved["t"]), 0.02)
    np.testing.assert_allclose(saved["q"][:200], saved["q"][200:], atol=1e-12)  # periodic
    heavier = load_model("fixtures/two_link_arm_heavier.urdf")
    np.testing.assert_allclose(saved["tau"], rnea(heavier, saved["q"], saved["v"], saved["a"]),
                               rtol=0, atol=1e-12)
    with pytest.raises(SystemExit) as ended:
        run(["identify", ARM, "--input", str(log), "--format", "json"])
    assert ended.value.code == 0
    captured = capsys.readouterr()
    assert captured.err == ""  # the time t: no warning from a command that does not use it
    assert '"rank": 6' in captured.out


def test_the_documented_fit_is_what_identify_writes(tmp_path, capsys):
    """docs/identify.md checks fixtures/two_link_arm_excited_fit.urdf as the file that
    `dyn identify ... --write` makes of the excitation's log: it still is (every inertia to
    1e-9)."""
    written = tmp_path / "fit.urdf"
    with pytest.raises(SystemExit) as ended:
        run(["identify", ARM, "--input", "fixtures/two_link_arm_excited.csv", "--validate",
             "0.2", "--write", str(written), "--format", "json", "-q"])
    assert ended.value.code == 0
    capsys.readouterr()
    fresh = load_model(str(written)).body_inertia
    kept = load_model("fixtures/two_link_arm_excited_fit.urdf").body_inertia
    np.testing.assert_allclose(fresh, kept, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("args,message", [
    (["--floor", "nosuch=0.1"], "dyn: fixtures/two_link_arm.urdf: --floor: no link, body, "
     "joint or site named 'nosuch'"),
    (["--floor", "link2"], "dyn: --floor 'link2': expected FRAME=HEIGHT (metres, the world's "
     "z, a finite number)"),
    (["--floor", "link2=nan"], "dyn: --floor 'link2=nan': expected FRAME=HEIGHT (metres, the "
     "world's z, a finite number)"),
    (["--floor", "link2=\u0663"], "dyn: --floor 'link2=\u0663': expected FRAME=HEIGHT (metres, "
     "the world's z, a finite number)"),  # an Arabic-Indic 3: digits are 0-9 here
    (["--noise", "0.1"], "dyn: --noise needs --torques"),
    (["--duration", "1e300"], "dyn: --duration x --rate gives 1e+302 states, about "
     "6.71e+294 GiB at once: more than the 4 GiB a run may hold"),
    (["--period", "1e300"], "dyn: --period x --rate gives 1e+302 states, about "
     "6.71e+294 GiB at once: more than the 4 GiB a run may hold"),
    (["--period", "1e-300"], "dyn: --period x --rate gives fewer than 2 states"),
    (["--torques", "--noise", "inf"], "dyn excite: Invalid value for '--noise': inf is not a "
     "finite number (see 'dyn excite --help')"),
    (["--period", "0.001", "--duration", "10"], "dyn: --harmonics 5 of --period 0.001 s "
     "reach 5000 Hz, not below half of --rate 100 Hz: the log would alias them (a longer "
     "--period, fewer --harmonics or a higher --rate)"),
    (["--period", "1", "--harmonics", "50", "--rate", "100"], "dyn: --harmonics 50 of "
     "--period 1 s reach 50 Hz, not below half of --rate 100 Hz: the log would alias them "
     "(a longer --period, fewer --harmonics or a higher --rate)"),
    (["--acceleration-limit", "1e-300"], "dyn: fixtures/two_link_arm.urdf: the limits leave "
     "no motion to excite: the base regressor's condition number is not finite (set by "
     "--acceleration-limit 1e-300 at --period 10 s)"),
])
def test_excite_refusals_are_one_line(args, message, tmp_path, capsys):
    with pytest.raises(SystemExit) as ended:
        run(["excite", ARM, "-o", str(tmp_path / "x.npz"), *args])
    assert ended.value.code == 2
    assert capsys.readouterr().err.strip().splitlines() == [message]
    assert not os.listdir(tmp_path)


@pytest.mark.skipif(not os.path.exists(PANDA), reason="example-robot-data is not installed")
def test_too_few_samples_for_the_base_parameters_is_refused(tmp_path, capsys):
    with pytest.raises(SystemExit) as ended:
        run(["excite", PANDA, "-o", str(tmp_path / "x.npz"), "--samples", "4"])
    assert ended.value.code == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        f"dyn: {PANDA}: 4 samples of 9 torques are fewer equations than the 51 base "
        "parameters: more samples"]


UR5 = os.path.join(ROOT, "ur_description/urdf/ur5_robot.urdf") if ROOT else ""


@pytest.mark.skipif(not os.path.exists(UR5), reason="example-robot-data is not installed")
def test_base_columns_are_the_ones_identify_takes_from_the_same_states():
    """The condition number excite minimises is that of the columns ``dyn identify`` keeps
    as base parameters: identify's rule (rank, and which of two columns equal up to sign,
    ur5's shoulder_link.Izz and upper_arm_link.m) applied to the same random states."""
    model = load_model(UR5)
    setting = Excitation(model, harmonics=2, period=10.0, samples=60)
    Y = regressor(model, *random_states(setting, np.random.default_rng(0), 200))
    log = Accumulator(Y.shape[2], model.nv)
    log.add(Y, np.ones(Y.shape[:2]))
    np.testing.assert_array_equal(setting.base,
                                  np.sort(base_parameters(log.finish()).independent))


def test_states_written_as_json_lines_read_back_to_the_bit(tmp_path):
    """write_states' JSON Lines (each kind's rows cut from one text of its block) hold every
    double as it was, t included, and nv = 0's empty vectors."""
    import json

    from treedyn.pipeline.trajectory import write_states

    rng = np.random.default_rng(3)
    states = {"q": rng.normal(size=(5, 3)), "v": np.zeros((5, 0)), "a": rng.normal(size=(5, 3))}
    states["q"][2, 1] = 5e-324
    t = np.linspace(0, 1, 5)
    write_states(str(tmp_path / "m.jsonl"), states, t)
    lines = [json.loads(line) for line in (tmp_path / "m.jsonl").read_text().splitlines()]
    assert len(lines) == 5 and [list(line) for line in lines] == [["q", "v", "a", "t"]] * 5
    for key, array in states.items():
        assert np.array_equal(np.array([line[key] for line in lines]).reshape(array.shape), array)
    assert np.array_equal([line["t"] for line in lines], t)


def test_samples_are_refused_past_the_objectives_memory(tmp_path, capsys):
    """--samples is refused where the objective's samples would pass the run's memory, by
    an estimate that bounds what the search holds per sample: measured by tracemalloc
    (numpy reports its arrays to it) on the two-link arm at two sample counts, the peak's
    growth per sample stays below the estimate and above a quarter of it."""
    import tracemalloc

    from treedyn.engine.excitation import sample_bytes
    from treedyn.pipeline.chunks import MEMORY

    model = load_model(ARM)
    each = sample_bytes(model, 5)
    with pytest.raises(SystemExit) as ended:
        run(["excite", ARM, "-o", str(tmp_path / "x.npz"), "--samples", "10000000"])
    assert ended.value.code == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        f"dyn: --samples 10000000 would hold about {1e7 * each / 2 ** 30:.3g} GiB at once; "
        f"at most {MEMORY // each} on this model"]
    peaks = []
    for samples in (2000, 8000):
        tracemalloc.start()
        try:
            excite(Excitation(model, harmonics=5, period=10.0, samples=samples), 0, 2)
            peaks.append(tracemalloc.get_traced_memory()[1])
        finally:
            tracemalloc.stop()
    per_sample = (peaks[1] - peaks[0]) / 6000  # (the constant part left out)
    assert each / 4 < per_sample < each, (per_sample, each)


def test_a_model_whose_one_sample_passes_the_memory_names_the_harmonics(monkeypatch):
    """Where even one of the objective's samples passes the run's memory, fewer --samples
    cannot help: the line names the model and --harmonics (the memory made small here)."""
    from treedyn.engine.excitation import sample_bytes
    from treedyn.pipeline import trajectory
    from treedyn.pipeline.errors import UsageError

    model = load_model(ARM)
    monkeypatch.setattr(trajectory, "MEMORY", sample_bytes(model, 5) - 1)
    with pytest.raises(UsageError) as refused:
        trajectory.sample_times(model, trajectory.Plan(duration=1.0))
    assert str(refused.value).startswith(f"dyn: {ARM}: one sample of the objective would "
                                         "hold about")
    assert str(refused.value).endswith("GiB a run may hold: fewer --harmonics")
    trajectory.sample_times(model, trajectory.Plan(duration=1.0, harmonics=4))  # fits
