"""``--plot FILE`` and tables that fit the terminal.

Each picture is drawn by a library function on a Figure (:func:`treedyn.plots.figure`),
inspected here through its artists (lines' data, images' arrays, bars' heights) against
the JSON document the command prints and against references outside the picture code:
the log file's own numbers, the engine's symbolic elimination, M computed again. The
files are checked as files: the PNG header's size, the SVG's and PDF's page size.
"""
from __future__ import annotations

import json
import math
import re
import struct
import sys
import sysconfig
from pathlib import Path
from xml.etree import ElementTree

import numpy as np
import pytest

import matplotlib  # noqa: F401  (imported once: the pictures below share it)
from in_process import dyn_here
from treedyn import plots
from treedyn.engine import crba
from treedyn.engine.factor import fill_in
from treedyn.parsers import load_model
from treedyn.pipeline.schema import versioned
from treedyn.plots import fit, matrices, series

ROOT = Path(__file__).resolve().parents[1]
ARM = ROOT / "fixtures" / "two_link_arm.urdf"
HEAVIER = ROOT / "fixtures" / "two_link_arm_heavier.urdf"
LOG = ROOT / "fixtures" / "two_link_arm_log.csv"
LIMITS_LOG = ROOT / "fixtures" / "two_link_arm_limits_log.csv"
ROBOTS = Path(sysconfig.get_paths()["purelib"]) / "cmeel.prefix/share/example-robot-data/robots"
TALOS = ROBOTS / "talos_data" / "robots" / "talos_reduced.urdf"  # 38 dofs with --free-flyer
PANDA = ROBOTS / "panda_description" / "urdf" / "panda.urdf"
MISSING = "dyn: --plot needs matplotlib: pip install 'treedyn[plot]'"


def dyn(*args, columns: int | None = None):
    """``dyn ARGS`` in this process (stdout a pipe): (exit code, stdout text, stderr)."""
    import os

    env = dict(os.environ, **({"COLUMNS": str(columns)} if columns else {}))
    done = dyn_here([str(a) for a in args], cwd=ROOT, env=env)
    return done.returncode, done.stdout.decode(), done.stderr.decode()


def dyn_json(*args) -> dict:
    code, out, err = dyn(*args, "--format", "json")
    assert err == "" and code in (0, 1), err
    return json.loads(out)


def bars(axes) -> list[float]:
    return [patch.get_height() for patch in axes.patches if hasattr(patch, "get_height")]


# ------------------------------------------------------------------------------ files
def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def test_each_format_is_written_at_the_size_asked(tmp_path):
    png, svg, pdf = tmp_path / "a.png", tmp_path / "a.svg", tmp_path / "a.pdf"
    assert dyn("statics", ARM, "--samples", 32, "--plot", png, "--plot-size", "1234x567px",
               "-f", "json")[0] == 0
    assert png_size(png) == (1234, 567)
    assert dyn("statics", ARM, "--samples", 32, "--plot", svg, "--plot-size", "8x5",
               "-f", "json")[0] == 0
    root = ElementTree.parse(svg).getroot()
    assert (root.get("width"), root.get("height")) == ("576pt", "360pt")  # 72 pt per inch
    assert dyn("statics", ARM, "--samples", 32, "--plot", pdf, "--plot-size", "6.5x4in",
               "-f", "json")[0] == 0
    data = pdf.read_bytes()
    assert data.startswith(b"%PDF-") and data.rstrip().endswith(b"%%EOF")
    box = re.search(rb"/MediaBox\s*\[\s*0\s+0\s+([\d.]+)\s+([\d.]+)\s*\]", data)
    assert box and (float(box[1]), float(box[2])) == (468.0, 288.0)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.pdf", "a.png", "a.svg"]


@pytest.mark.parametrize("args, message", [
    (["--plot", "m.jpg"], "dyn: --plot m.jpg: the picture's format follows its suffix: "
                          ".png, .svg or .pdf"),
    (["--plot", "m.png", "--plot-size", "8x"], "dyn: --plot-size '8x': expected WxH in "
     "inches (8x5) or pixels (1200x800px), each side from 1 inch (100px) to 100 inches"),
    (["--plot-size", "8x5"], "dyn: --plot-size needs --plot FILE"),
])
def test_a_bad_picture_is_one_line_before_any_work(args, message, tmp_path):
    code, out, err = dyn("condition", ARM, *args, "-f", "json")
    assert (code, out, err) == (2, "", message + "\n")


def test_without_matplotlib_one_line_and_nothing_written(tmp_path, monkeypatch):
    target = tmp_path / "c.png"
    target.write_bytes(b"before")
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib fails
    for args in (["condition", ARM], ["mass", ARM, "--sparsity"]):
        assert dyn(*args, "--plot", target, "-f", "json") == (2, "", MISSING + "\n")
    assert target.read_bytes() == b"before"
    with pytest.raises(plots.UsageError, match=re.escape(MISSING)):
        plots.figure(series.statics, {})


def test_a_mass_matrix_too_large_to_draw_is_one_line_before_any_result(tmp_path):
    """mass --sparsity --plot on a model past the M dyn mass writes (a 5 000-link star):
    one line and exit 2 before anything is printed or computed, no picture."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from bench_scaling import large_urdf

    star = tmp_path / "star.urdf"
    star.write_text(large_urdf("star", 5000))
    target = tmp_path / "m.png"
    assert dyn("mass", star, "--sparsity", "--plot", target, "-f", "json") == (
        2, "", "dyn: --plot: M of this model (5000 dofs) is too large to draw\n")
    assert not target.exists()


def test_a_picture_replaces_a_file_only_whole(tmp_path):
    target = tmp_path / "s.png"
    target.write_bytes(b"before")
    picture = plots.Plot(str(target))
    with pytest.raises(KeyError):  # drawing fails: the file from before is untouched
        picture.draw(series.statics, {"model": "x"})
    assert target.read_bytes() == b"before" and list(tmp_path.iterdir()) == [target]


def test_matplotlib_is_imported_only_for_a_picture():
    """No module of the package imports matplotlib at its top: a command without --plot
    runs without it (the commands import :mod:`treedyn.plots` and its figure modules)."""
    import ast

    for path in [*(ROOT / "plots").glob("*.py"), *(ROOT / "cli").rglob("*.py")]:
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [a.name for a in node.names] + [getattr(node, "module", "") or ""]
                assert not any(n.split(".")[0] == "matplotlib" for n in names), path


# ---------------------------------------------------------------- what each one draws
@pytest.fixture(scope="module")
def talos_sparsity() -> dict:
    return dyn_json("mass", TALOS, "--free-flyer", "--sparsity")


def test_sparsity_draws_the_pattern_the_factor_and_the_root_first_fill(talos_sparsity):
    document, dofs = talos_sparsity["sparsity"], talos_sparsity["dofs"]
    drawn = plots.figure(matrices.sparsity, document, dofs)
    left, right = drawn.axes[:2]
    pattern = np.asarray(left.images[0].get_array())
    M = np.asarray(talos_sparsity["M"])
    assert np.array_equal(pattern, np.asarray(document["pattern"]))
    assert not np.any(M[pattern == 0]) and pattern.sum() == document["nnz"]
    cells = np.asarray(right.images[0].get_array())
    assert np.count_nonzero((cells == 1) | (cells == 2)) == document["nnz_factor"]
    assert np.count_nonzero(cells == 2) == document["fill_in"]["tree_order"] == 0
    # the cells marked as root-first fill-in are the symbolic elimination's new pairs
    root_first = fill_in(pattern.astype(bool), np.arange(len(dofs)))
    assert np.count_nonzero(cells == 3) == root_first == document["fill_in"]["root_first"]
    assert not np.any(np.triu(cells, 1))
    assert [t.get_text() for t in left.get_xticklabels()] == dofs
    without = {key: value for key, value in document.items() if key != "pattern"}
    with pytest.raises(plots.UsageError, match="too large to draw"):  # M past dyn mass's cap
        plots.figure(matrices.sparsity, without, dofs)


def test_condition_draws_every_sample_and_the_weakest_direction():
    from treedyn.engine.analysis.conditioning import ConditionOptions, analyze
    from treedyn.engine.analysis.condition_report import condition_document
    from treedyn.pipeline.layout import Layout

    model = load_model(str(TALOS), free_flyer=True)
    options = ConditionOptions(samples=12, seed=3)
    report = analyze(model, options)
    document = condition_document(report, model, Layout.of(model).v_labels, options)
    printed = dyn_json("condition", TALOS, "--free-flyer", "--samples", 12, "--seed", 3)
    assert json.loads(json.dumps(versioned(document, "condition"))) == printed
    drawn = plots.figure(series.condition, printed, report.cond)
    left, right = drawn.axes
    cond = left.lines[0].get_ydata()
    assert left.get_yscale() == "log"
    assert [cond.min(), np.median(cond), cond.max()] == [printed["cond"][k] for k in
                                                           ("min", "median", "max")]
    eigen = np.linalg.eigvalsh(crba(model, np.asarray(printed["worst"]["q"])))
    assert math.isclose(cond.max(), eigen[-1] / eigen[0], rel_tol=1e-9)
    direction = printed["worst"]["weakest_direction"]
    assert bars(right) == list(direction.values())
    assert [t.get_text() for t in right.get_xticklabels()] == list(direction)


def test_statics_draws_each_joints_ratio_and_the_limit():
    printed = dyn_json("statics", ARM, "--samples", 64)
    axes = plots.figure(series.statics, printed).axes[0]
    assert bars(axes) == [joint["ratio"] for joint in printed["joints"]]
    assert [j["max"] / j["limit"] for j in printed["joints"]] == bars(axes)
    assert any(list(line.get_ydata()) == [1.0, 1.0] for line in axes.lines)


def test_diff_draws_each_entrys_change_of_M():
    from treedyn.engine.analysis.diff import DiffOptions, diff
    from treedyn.pipeline.diff_report import diff_document

    old, new = load_model(str(ARM)), load_model(str(HEAVIER))
    report = diff(old, new, DiffOptions(samples=5, seed=2))
    printed = dyn_json("diff", ARM, HEAVIER, "--samples", 5, "--seed", 2)
    assert json.loads(json.dumps(versioned(diff_document(report, old, new, None), "diff"))) \
        == printed
    axes = plots.figure(matrices.mass_change, printed, report.matrix, old).axes[0]
    image = np.ma.filled(axes.images[0].get_array(), 0.0)
    pairs = printed["mass_matrix"]["pairs"]
    assert pairs and image.max() == printed["max_mass_matrix_change"]
    for pair in pairs:  # each pair's change, and M of both models at its sample again
        i, j = (["joint1", "joint2"].index(name) for name in pair["dofs"])
        assert image[i, j] == image[j, i] == pair["change"]
        q = report.matrix.q_old[pair["sample"]]
        A, B = crba(old, q), crba(new, q)
        expected = abs(B[i, j] - A[i, j]) / math.sqrt(A[i, i] * A[j, j])
        assert math.isclose(pair["change"], expected, rel_tol=1e-12)


def test_check_limits_draws_the_log_and_the_peak_ratios():
    from treedyn.pipeline.compute import EFFORT
    from treedyn.pipeline.layout import Layout
    from treedyn.pipeline.sinks import LimitsSink
    from treedyn.pipeline.source import Input
    from treedyn.pipeline.stream import run

    layout = Layout.of(load_model(str(ARM)))
    source = Input.open(str(LIMITS_LOG))
    sink = LimitsSink(None, layout, {"model": "two_link_arm", "input": source.name})
    sink.trace()
    run(layout, EFFORT, source, sink)
    printed = dyn_json("check-limits", ARM, "--input", LIMITS_LOG)
    assert json.loads(json.dumps(versioned(sink.document(), "check-limits"))) == printed
    drawn = plots.figure(series.limits, printed, sink.traces)
    ratios, *q_axes = drawn.axes
    log = np.loadtxt(LIMITS_LOG, delimiter=",", skiprows=1)
    for k, axes in enumerate(q_axes):  # q of each dof over the log, its bounds dashed
        assert np.array_equal(axes.lines[0].get_ydata(), log[:, k])
        entry = printed["joints"][k]["position"]
        assert [list(line.get_ydata()) for line in axes.lines[1:]] == \
            [[entry["lower"]] * 2, [entry["upper"]] * 2]
    heights = np.array(bars(ratios)).reshape(3, -1)  # kinds (q, v, tau) x dofs
    for k, joint in enumerate(printed["joints"]):
        for row, kind in ((1, "velocity"), (2, "effort")):
            worst = joint[kind]["worst"]
            if worst is not None:  # outside: the worst value over its symmetric limit
                assert math.isclose(heights[row, k], abs(worst["value"]) / joint[kind]["upper"],
                                    rel_tol=1e-12)
            else:
                assert heights[row, k] <= 1.0
    assert heights[0, 0] > 1 > heights[0, 1]  # joint1 leaves its range, joint2 does not


def test_identify_draws_measured_and_predicted_torques_and_the_residuals():
    from treedyn.pipeline.reports import identify_document
    from treedyn.engine.analysis.identify_report import report
    from treedyn.pipeline.layout import Layout
    from treedyn.pipeline.regression import identify_stream

    layout = Layout.of(load_model(str(ARM)))
    result = identify_stream(layout, str(LOG))
    document = identify_document(report(result, layout.v_labels))
    printed = dyn_json("identify", ARM, "--input", LOG)
    assert printed["sigma"] == document["sigma"]
    assert printed["residuals"] == json.loads(json.dumps(document["residuals"]))
    drawn = plots.figure(fit.identify, printed, fit.torques(layout, str(LOG), result, None),
                         layout)
    log = np.loadtxt(LOG, delimiter=",", skiprows=1)
    *torque_axes, histogram = drawn.axes
    for k, axes in enumerate(torque_axes):
        measured, ols, consistent = (line.get_ydata() for line in axes.lines)
        assert np.array_equal(measured, log[:, 6 + k])  # the log's own tau
        rms = math.sqrt(np.mean((measured - ols) ** 2))
        assert math.isclose(rms, printed["residuals"]["train"]["ols"][k], rel_tol=1e-6)
        rms = math.sqrt(np.mean((measured - consistent) ** 2))
        assert math.isclose(rms, printed["residuals"]["train"]["consistent"][k], rel_tol=1e-6)
    sigma = printed["sigma"]
    gaussian = histogram.lines[0].get_ydata()
    assert math.isclose(gaussian.max(), 1 / (sigma * math.sqrt(2 * math.pi)), rel_tol=1e-4)


RUNS = {"mass": ["mass", ARM, "--free-flyer", "--sparsity"],  # each command's picture
        "condition": ["condition", ARM, "--samples", 5],
        "statics": ["statics", ARM, "--samples", 32],
        "diff": ["diff", ARM, HEAVIER, "--samples", 3],
        "check-limits": ["check-limits", ARM, "--input", LIMITS_LOG],
        "identify": ["identify", ARM, "--input", LOG]}


def test_every_picture_is_written_by_its_command(tmp_path):
    for name, args in RUNS.items():
        target = tmp_path / f"{name}.png"
        code, _, err = dyn(*args, "--plot", target, "--plot-size", "320x200px", "-f", "json")
        assert code in (0, 1) and err == "", (name, err)
        assert png_size(target) == (320, 200), name
    assert dyn("identify", ARM, "--input", "-", "--plot", tmp_path / "i.png")[2] == \
        "dyn: --plot reads the log again: give it as a file, not stdin\n"
    assert dyn("mass", ARM, "--plot", tmp_path / "m.png")[2] == \
        "dyn: --plot draws M's pattern: give --sparsity too\n"


@pytest.mark.parametrize("name", sorted(RUNS))
def test_a_picture_too_small_to_draw_is_refused_before_any_work(name, tmp_path):
    """A side below 1 inch (100 px) has no room for a picture (a PNG under one pixel once
    ended in an internal error, after the JSON was printed): one line, nothing printed;
    the smallest size allowed is drawn at that size."""
    target = tmp_path / f"{name}.png"
    for size in ("0.001x5", "0.4x0.4px", "99x500px"):
        code, out, err = dyn(*RUNS[name], "--plot", target, "--plot-size", size, "-f", "json")
        assert (code, out, err.count("\n")) == (2, "", 1), (size, err)
        assert err.startswith(f"dyn: --plot-size '{size}': ") and "1 inch (100px)" in err
        assert not target.exists()
    code, _, err = dyn(*RUNS[name], "--plot", target, "--plot-size", "100x100px", "-f", "json")
    assert code in (0, 1) and err == "" and png_size(target) == (100, 100), err


# ------------------------------------------------------------------ tables that fit
def blocks_headers(text: str) -> list[str]:
    """The column names of every block of a table cut to the terminal, in order (the
    first column, repeated in each, left out)."""
    lines = text.split("\n")
    return [name for k, line in enumerate(lines) if line.startswith("(columns ")
            and "not shown" not in line for name in lines[k + 1].split()
            if name != "parameter"]


@pytest.mark.parametrize("width", [80, 120])
def test_wide_tables_fit_the_terminal(width, talos_sparsity):
    dofs = talos_sparsity["dofs"]
    code, mass, _ = dyn("mass", TALOS, "--free-flyer", "--sparsity", "-f", "table",
                        columns=width)
    code2, regressor, _ = dyn("regressor", TALOS, "--free-flyer", "-f", "table",
                              columns=width)
    assert code == code2 == 0
    for text, how in ((mass, "--format json (or --output FILE) gives every column"),
                      (regressor, "--format json gives every column")):
        assert max(map(len, text.split("\n"))) <= width
        shown = blocks_headers(text)
        assert shown == dofs[:len(shown)] and 0 < len(shown) < len(dofs)
        note = " ".join(text.split()).split(f"(columns {len(shown) + 1}-38 of 38 not shown: ")
        assert len(note) == 2 and note[1].startswith(how + ")")
    rows = {line.split()[0]: line.split()[1:] for line in mass.split("\n")[3:41]}
    M = talos_sparsity["M"]
    for i, name in enumerate(dofs):  # the first block's numbers are M's
        assert [float(x) for x in rows[name]] == pytest.approx(M[i][:len(rows[name])],
                                                                rel=1e-5, abs=1e-12)


@pytest.mark.parametrize("width", [80, 120])
def test_the_reports_fit_the_terminal(width):
    """statics' table (its last column, the configuration, wrapped beside the joints),
    condition's tables and its lists of joints: within the width, every joint's row."""
    code, statics, _ = dyn("statics", PANDA, "--samples", 16, "-f", "table", columns=width)
    assert code in (0, 1) and max(map(len, statics.split("\n"))) <= width
    printed = dyn_json("statics", PANDA, "--samples", 16)
    starts = [line.split()[0] for line in statics.split("\n") if line.strip()]
    blocks = max(1, starts.count("(columns"))
    assert blocks > 1  # (the table is some 200 columns wide)
    for joint in printed["joints"]:  # a row of each joint in each block of columns
        assert starts.count(joint["joint"]) == blocks
    code, condition, _ = dyn("condition", TALOS, "--free-flyer", "--samples", 3, "-f",
                             "table", columns=width)
    assert code == 0 and "weakest direction there" in condition
    assert max(len(line) for line in condition.split("\n")) <= width


def test_identify_draws_the_fit_with_its_known_parameters():
    """With --known, the drawn predictions hold the known values (fixed, not fitted): their
    RMS against the log's tau is the report's, as without."""
    from treedyn.engine.analysis.identify_report import report
    from treedyn.pipeline.drives import Drives
    from treedyn.pipeline.layout import Layout
    from treedyn.pipeline.regression import identify_stream

    layout = Layout.of(load_model(str(ARM)))
    result = identify_stream(layout, str(LOG), drives=Drives.of(False, ["link2.m=0.9"]))
    residuals = report(result, layout.v_labels)["residuals"]["train"]
    series = fit.torques(layout, str(LOG), result, None)
    for key in ("ols", "consistent"):
        rms = np.sqrt(np.mean((series["measured"] - series[key]) ** 2, axis=0))
        np.testing.assert_allclose(rms, residuals[key], rtol=1e-6)
