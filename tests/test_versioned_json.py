"""Every JSON document dyn prints names its schema first, ``treedyn.<command>/<N>``; one
object per state in JSON Lines does not (docs/interface.md, "Versioned JSON")."""
import json
from pathlib import Path

import pytest

from in_process import dyn_here
from treedyn.pipeline.schema import VERSIONS

ROOT = Path(__file__).resolve().parents[1]
ARM = "fixtures/two_link_arm.urdf"
LOG = "fixtures/two_link_arm_log.csv"

DOCUMENTS = {  # command -> its arguments (the arm, or its log), printing one document
    "info": [ARM], "inverse": [ARM, "--q", "0.5,1"], "forward": [ARM],
    "mass": [ARM, "--sparsity"], "check-inertia": [ARM], "condition": [ARM, "--samples", "3"],
    "verify": [ARM, "--samples", "3"], "diff": [ARM, ARM, "--samples", "2"],
    "regressor": [ARM], "identify": [ARM, "--input", LOG], "frames": [ARM],
    "jacobian": [ARM, "--frame", "link2"], "com": [ARM], "coriolis": [ARM, "--v", "1,2"],
    "check-limits": [ARM, "--input", LOG], "statics": [ARM, "--samples", "4"],
    "centroidal": [ARM], "energy": [ARM], "inertia-from-geometry": [ARM],
}


@pytest.mark.parametrize("command", list(DOCUMENTS))
def test_each_document_names_its_schema_first(command):
    done = dyn_here([command, *DOCUMENTS[command], "--format", "json"], cwd=ROOT)
    assert done.returncode in (0, 1), done.stderr
    document = json.loads(done.stdout)
    assert list(document)[0] == "schema" and document["schema"] == f"treedyn.{command}/1"
    assert VERSIONS[command] == 1


def test_bench_names_its_schema():
    done = dyn_here(["bench", ARM, "--states", "8", "--seconds", "0.01", "--no-files",
                     "--format", "json"], cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["schema"] == "treedyn.bench/1"


def test_json_lines_states_carry_none_and_a_written_summary_does(tmp_path):
    lines = dyn_here(["inverse", ARM, "--input", LOG, "--format", "json"], cwd=ROOT)
    states = [json.loads(line) for line in lines.stdout.splitlines()]
    assert len(states) == 500 and all(list(state) == ["tau"] for state in states)
    summary = tmp_path / "limits.json"
    done = dyn_here(["check-limits", ARM, "--input", LOG, "--output", summary], cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert json.loads(summary.read_text())["schema"] == "treedyn.check-limits/1"
