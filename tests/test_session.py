"""The session as a library (docs/api.md): a model loaded as ``dyn`` loads it, with the
environment's settings, and the state commands' rows for a Python caller, held to the
parser's model and the engine's own functions."""
import io
import os
import sys
from pathlib import Path

import numpy as np
import pytest

from treedyn.engine import configured, crba, settings
from treedyn.engine.named import center_of_mass, frame_jacobians, frame_set
from treedyn.parsers import load_model as parse_model
from treedyn.pipeline.errors import UsageError
from treedyn.pipeline.layout import Layout

ROOT = Path(__file__).resolve().parents[1]
ARM = ROOT / "fixtures" / "two_link_arm.urdf"


def test_a_model_from_stdin_with_the_engine_settings_of_the_environment(monkeypatch):
    from treedyn.session.models import load_model

    monkeypatch.setenv("TREEDYN_THREADS", "3")
    monkeypatch.setenv("TREEDYN_CHUNK", "77")
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(ARM.read_bytes())))
    with configured():  # (the settings set back after)
        model = load_model("-")
        assert (settings.threads, settings.chunk) == (3, 77)
    reference = parse_model(str(ARM))
    q = reference.random_configuration(np.random.default_rng(1), 5)
    assert model.source == "<stdin>" and model.joint_names == reference.joint_names
    np.testing.assert_array_equal(crba(model, q), crba(reference, q))
    with pytest.raises(UsageError, match="apply to .xacro models only"):
        load_model(str(ARM), xacro=(("name", "value"),))


def test_the_search_paths_are_the_environment_s(monkeypatch, tmp_path):
    from treedyn.session.models import package_paths

    monkeypatch.setenv("ROS_PACKAGE_PATH", f"{tmp_path}{os.pathsep}{os.pathsep}/b")
    monkeypatch.setenv("AMENT_PREFIX_PATH", "/opt/ros")
    monkeypatch.setenv("GZ_SIM_RESOURCE_PATH", "/g")
    monkeypatch.setenv("SDF_PATH", "/s")
    paths = package_paths(["meshes"])
    assert (paths.ros, paths.ament, paths.meshes, paths.models) == (
        (str(tmp_path), "/b"), ("/opt/ros",), ("meshes",), ("/g", "/s"))


def test_the_state_rows_are_the_engine_s_for_python_callers():
    from treedyn.pipeline.compute import compute
    from treedyn.pipeline.kinematics import state_row
    from treedyn.pipeline.vectors import single_state

    layout = Layout.of(parse_model(str(ARM)))
    model = layout.model
    states = single_state(layout, {"q": "0.5,1"}, {})
    row = state_row("com", layout, subtree="link2")
    root = int(frame_set(model, ["link2"]).on_body[0])
    mass, c, Jcom = center_of_mass(model, states.q, root)
    assert row.mass == pytest.approx(float(mass))
    document = row.document(compute(row.computation, layout, states, None)[0])
    np.testing.assert_allclose(document["com"], c[0], rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(document["Jcom"], Jcom[0], rtol=1e-14, atol=1e-15)
    row = state_row("jacobian", layout, frame="link2", reference="world")
    J = compute(row.computation, layout, states, None)[0]
    np.testing.assert_allclose(J, frame_jacobians(model, states.q, frame_set(model, ["link2"]),
                                                  "WORLD")[0, 0], rtol=1e-14, atol=1e-15)
    assert len(row.labels) == J.size
    with pytest.raises(UsageError, match="no link, body, joint or site named 'elbow'"):
        state_row("frames", layout, frame=["elbow"])


def test_a_library_caller_s_heap_is_not_frozen():
    """load_model as a Python program calls it leaves the garbage collector as it was (the
    dyn program alone asks for the freeze); parsed the same either way."""
    import gc

    from treedyn.session.models import load_model

    arm = str(ARM)
    before = gc.get_freeze_count()
    model = load_model(arm)
    assert gc.get_freeze_count() == before
    assert np.array_equal(crba(model, np.zeros((1, model.nq))),
                          crba(parse_model(arm), np.zeros((1, model.nq))))
