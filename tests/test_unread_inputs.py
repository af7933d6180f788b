"""A vector in an input file that the command does not read is named in one warning.

forward computes a (an "a" in the file is not used), inverse computes tau, mass reads q
only: before, dyn computed without those vectors in silence, which looks like an answer
to what the file asks. Every format (JSON Lines, CSV, .npz), one process and JSON Lines
split over processes.
"""
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
ARM = ROOT / "fixtures" / "two_link_arm.urdf"
READS = {"inverse": ("q", "v", "a"), "forward": ("q", "v", "tau"), "mass": ("q",)}


def dyn(args, **env):
    environment = {**os.environ, **env}
    return subprocess.run([sys.executable, "-m", "treedyn.cli", *map(str, args)], cwd=ROOT,
                          capture_output=True, text=True, env=environment, timeout=120)


def write(folder: Path, fmt: str, values: dict) -> Path:
    count = len(values["q"])
    path = folder / f"states.{fmt}"
    if fmt == "npz":
        np.savez(path, **values)
    elif fmt == "jsonl":
        path.write_text("".join(
            "{" + ", ".join(f'"{k}": {values[k][i].tolist()}' for k in values) + "}\n"
            for i in range(count)))
    else:
        header = ",".join(f"{k}{j}" for k in values for j in range(values[k].shape[1]))
        path.write_text(header + "\n" + "".join(
            ",".join(repr(float(x)) for k in values for x in values[k][i]) + "\n"
            for i in range(count)))
    return path


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "npz"])
@pytest.mark.parametrize("command", ["inverse", "forward", "mass"])
def test_each_unread_vector_is_named_once_and_changes_nothing(tmp_path, fmt, command):
    rng = np.random.default_rng(1)
    values = {kind: rng.normal(size=(40, 2)) for kind in ("q", "v", "a", "tau")}
    everything = write(tmp_path, fmt, values)
    (tmp_path / "only").mkdir()
    read = write(tmp_path / "only", fmt, {k: values[k] for k in READS[command]})
    full = dyn([command, ARM, "-i", everything, "-f", "json"])
    alone = dyn([command, ARM, "-i", read, "-f", "json"])
    assert full.returncode == alone.returncode == 0, full.stderr
    assert full.stdout == alone.stdout  # the unread vectors change nothing ...
    unused = [kind for kind in ("v", "a", "tau") if kind not in READS[command]]
    lines = full.stderr.splitlines()
    assert len(lines) == 1 and alone.stderr == "", full.stderr  # ... and are named, once
    assert "not read: this command reads" in lines[0]
    assert all(f'"{kind}"' in lines[0].split("not read")[0] for kind in unused), lines[0]


def test_a_split_text_file_names_them_once(tmp_path):
    """Parts over worker processes warn as one process does: once."""
    rng = np.random.default_rng(2)
    values = {kind: rng.normal(size=(400, 2)) for kind in ("q", "v", "a", "tau")}
    path = write(tmp_path, "jsonl", values)
    split = dyn(["forward", ARM, "-i", path, "-o", tmp_path / "a.csv"], TREEDYN_PROCESSES="2",
                TREEDYN_PART_BYTES="3000", TREEDYN_STREAM_CHUNK="32")
    one = dyn(["forward", ARM, "-i", path, "-o", tmp_path / "b.csv"], TREEDYN_PROCESSES="1")
    assert split.returncode == one.returncode == 0
    assert split.stderr == one.stderr
    assert one.stderr.count("not read") == 1
    assert (tmp_path / "a.csv").read_bytes() == (tmp_path / "b.csv").read_bytes()


def test_mass_names_the_external_forces_of_json_lines(tmp_path):
    """mass takes no forces: an "fext" object is named, as forward's "a" is."""
    path = tmp_path / "s.jsonl"
    path.write_text('{"q": [0.1, 0.2], "fext": {"link2": [0, 0, 1, 0, 0, 0]}}\n')
    done = dyn(["mass", ARM, "-i", path, "-f", "json"])
    assert done.returncode == 0
    assert done.stderr == (f'dyn: warning: {path}: key "fext" not read: this command reads '
                           '"q"\n')
