"""No output of a dyn run replaces a file the run reads, nor another of its outputs.

Each output option (--output, -o, --plot, --write, --output DIR/) is checked against every
file the run reads -- the model and the files it includes, the meshes it names, the states
(--input, --validate), a --baseline -- through links and stdin redirected from a file,
and against the run's other outputs: one line, exit 2, every file as it was, nothing left
beside them. A folder or a device where a model or a picture would be written is refused,
not replaced. (An output that is the --input is tests/test_pipelines.py's.)
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from test_cli import ROOT, assert_usage_error, dyn

FIXTURES = ROOT / "fixtures"
REPLACES = "writing it would replace a file this run reads"


@pytest.fixture
def folder(tmp_path):
    """A folder with the two-link arm, its logs, and shapes.urdf with its meshes."""
    for name in ("two_link_arm.urdf", "two_link_arm_log.csv", "two_link_arm_limits_log.csv",
                 "two_link_arm_excited.csv", "shapes.urdf"):
        shutil.copy(FIXTURES / name, tmp_path / name)
    shutil.copytree(FIXTURES / "meshes", tmp_path / "meshes")
    return tmp_path


def contents(folder) -> dict:
    return {path.relative_to(folder): path.read_bytes() for path in folder.rglob("*")
            if path.is_file() and not path.is_symlink()}


# (link name -> the file it points to, dyn's arguments, what the line says the file is)
CASES = {
    "inverse-to-model": ("o.csv", "two_link_arm.urdf", ["inverse", "two_link_arm.urdf", "-i",
                         "two_link_arm_log.csv", "-o", "o.csv"], "the model file"),
    "energy-to-model": ("o.npz", "two_link_arm.urdf", ["energy", "two_link_arm.urdf", "-i",
                        "two_link_arm_log.csv", "-o", "o.npz"], "the model file"),
    "regressor-to-model": ("o.npz", "two_link_arm.urdf", ["regressor", "two_link_arm.urdf",
                           "-i", "two_link_arm_log.csv", "-o", "o.npz"], "the model file"),
    "limits-to-model": ("o.json", "two_link_arm.urdf", [
        "check-limits", "two_link_arm.urdf", "-i", "two_link_arm_limits_log.csv", "-o",
        "o.json"], "the model file"),
    "excite-to-model": ("o.csv", "two_link_arm.urdf", ["excite", "two_link_arm.urdf", "-o",
                        "o.csv", "--iterations", "2"], "the model file"),
    "plot-to-log": ("p.png", "two_link_arm_limits_log.csv", [
        "check-limits", "two_link_arm.urdf", "-i", "two_link_arm_limits_log.csv", "--plot",
        "p.png"], "the input file"),
    "plot-to-model": ("p.svg", "two_link_arm.urdf", ["condition", "two_link_arm.urdf",
                      "--samples", "3", "--plot", "p.svg"], "the model file"),
    "plot-to-old-model": ("p.png", "two_link_arm.urdf", [
        "diff", "two_link_arm.urdf", "shapes.urdf", "--plot", "p.png"], "the model file"),
    "plot-to-validation-log": ("p.png", "two_link_arm_log.csv", [
        "identify", "two_link_arm.urdf", "-i", "two_link_arm_excited.csv", "--validate",
        "two_link_arm_log.csv", "--plot", "p.png"], "the input file"),
    "convert-to-mesh": ("o.xml", "meshes/wedge.stl", ["convert", "shapes.urdf", "-o",
                        "o.xml"], "a mesh of the model"),
    "write-to-mesh": ("o.urdf", "meshes/wedge.stl", ["inertia-from-geometry", "shapes.urdf",
                      "--write", "o.urdf"], "a mesh of the model"),
    "plot-to-mesh": ("p.png", "meshes/wedge.stl", ["condition", "shapes.urdf", "--samples",
                     "3", "--plot", "p.png"], "a mesh of the model"),
}


@pytest.mark.parametrize("case", CASES, ids=str)
def test_no_output_replaces_a_file_the_run_reads(folder, case, monkeypatch):
    link, target, args, what = CASES[case]
    (folder / link).symlink_to(folder / target)
    before = contents(folder)
    monkeypatch.chdir(folder)
    line = assert_usage_error(dyn(*args, check=False), f"{link} is {what}", REPLACES)
    assert target in line
    assert contents(folder) == before  # (and nothing left beside them)


def test_a_baseline_is_not_replaced_by_the_output_it_filters(folder, monkeypatch):
    monkeypatch.chdir(folder)
    log = "two_link_arm_limits_log.csv"
    baseline = dyn("check-limits", "two_link_arm.urdf", "-i", log, "-f", "json", check=False)
    (folder / "base.json").write_bytes(baseline.stdout)
    before = contents(folder)
    assert_usage_error(dyn("check-limits", "two_link_arm.urdf", "-i", log, "-o", "base.json",
                           "--baseline", "base.json", check=False),
                       "base.json is the --baseline file", REPLACES)
    assert contents(folder) == before


@pytest.mark.parametrize("args,link,target", [
    (["inverse", "-", "-i", "two_link_arm_log.csv", "-o", "o.csv"], "o.csv",
     "two_link_arm.urdf"),  # the model on stdin
    (["identify", "two_link_arm.urdf", "-i", "-", "--write", "o.urdf"], "o.urdf",
     "two_link_arm_excited.csv"),  # the log on stdin
], ids=["model", "log"])
def test_stdin_redirected_from_a_file_protects_it(folder, args, link, target):
    (folder / link).symlink_to(folder / target)
    before = contents(folder)
    with open(folder / target, "rb") as stdin:
        result = subprocess.run([sys.executable, "-m", "treedyn.cli", *args], stdin=stdin,
                                capture_output=True, cwd=folder, timeout=120)
    assert_usage_error(result, link)
    assert contents(folder) == before


def test_two_outputs_of_one_run_are_two_files(folder, monkeypatch):
    """--plot naming the --output (through a link) is refused before anything is computed."""
    monkeypatch.chdir(folder)
    (folder / "out.npz").write_bytes(b"yesterday")
    (folder / "p.png").symlink_to(folder / "out.npz")
    assert_usage_error(dyn("mass", "two_link_arm.urdf", "--sparsity", "-i",
                           "two_link_arm_log.csv", "-o", "out.npz", "--plot", "p.png",
                           check=False), "are one file")
    assert (folder / "out.npz").read_bytes() == b"yesterday"


def test_a_picture_whose_folder_is_missing_is_refused_before_the_model_is_written(
        folder, monkeypatch):
    monkeypatch.chdir(folder)
    (folder / "new.urdf").write_text("PREV")
    assert_usage_error(dyn("identify", "two_link_arm.urdf", "-i", "two_link_arm_excited.csv",
                           "--write", "new.urdf", "--plot", "nodir/p.png", check=False),
                       "--plot nodir/p.png: no folder nodir")
    assert (folder / "new.urdf").read_text() == "PREV"


@pytest.mark.parametrize("args", [
    ["convert", "two_link_arm.urdf", "-o", "{}.xml"],
    ["inertia-from-geometry", "shapes.urdf", "--write", "{}.urdf"],
    ["condition", "two_link_arm.urdf", "--samples", "3", "--plot", "{}.png"],
], ids=lambda args: args[0])
@pytest.mark.parametrize("kind", ["folder", "fifo"])
def test_a_folder_or_a_pipe_is_not_replaced_by_a_written_file(folder, monkeypatch, args,
                                                               kind):
    monkeypatch.chdir(folder)
    name = args[-1].format("target")
    if kind == "folder":
        (folder / name).mkdir()
    else:
        os.mkfifo(folder / "pipe")
        (folder / name).symlink_to(folder / "pipe")
    assert_usage_error(dyn(*args[:-1], name, check=False), name)
    assert (folder / name).is_dir() if kind == "folder" else (folder / "pipe").is_fifo()
    assert sorted(os.listdir(folder / name) if kind == "folder" else []) == []
    assert not [entry for entry in os.listdir(folder) if entry.endswith(".part")
                or ".part." in entry]


def test_a_hard_link_is_another_name_that_an_output_leaves_whole(folder, monkeypatch):
    """Outputs are renamed onto their names: another name of the same file (a hard link, as
    deduplicating tools and DVC make them) keeps its contents, so it is not refused -- a
    baseline linked to the last report, two identical outputs linked together."""
    monkeypatch.chdir(folder)
    log = "two_link_arm_limits_log.csv"
    assert dyn("check-limits", "two_link_arm.urdf", "-i", log, "-o", "limits.json",
               check=False).returncode == 1  # (its findings)
    os.link("limits.json", "baseline.json")
    kept = (folder / "baseline.json").read_bytes()
    result = dyn("check-limits", "two_link_arm.urdf", "-i", log, "--baseline",
                 "baseline.json", "-o", "limits.json", check=False)
    assert result.returncode == 0, result.stderr.decode()
    assert (folder / "baseline.json").read_bytes() == kept
    (folder / "logs").mkdir()
    for name in ("a", "b"):
        shutil.copy("two_link_arm_log.csv", folder / "logs" / f"{name}.csv")
    arguments = ("inverse", "two_link_arm.urdf", "--input", "logs/*.csv", "--output", "out/",
                 "-q")
    dyn(*arguments)
    os.remove(folder / "out" / "b.npz")
    os.link(folder / "out" / "a.npz", folder / "out" / "b.npz")
    dyn(*arguments)  # (each name replaced by its own new file)
    assert os.stat(folder / "out" / "a.npz").st_ino != os.stat(folder / "out" / "b.npz").st_ino
