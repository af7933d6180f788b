"""engine/inertia_forms: every form of a rigid body's inertia converts to every other and
back, and agrees with Pinocchio's (``pin.Inertia``, ``pin.PseudoInertia``) to 1e-12."""
from __future__ import annotations

import numpy as np
import pytest

from treedyn.engine.description import Inertia
from treedyn.engine.inertia_forms import (about_com, about_origin, com_form,
                                          dynamic_parameters, parameters,
                                          parameters_of_pseudo, pseudo_inertia,
                                          pseudo_inertia_of, spatial_inertia,
                                          spatial_pseudo_inertia)

pin = pytest.importorskip("pinocchio")


def random_body(rng):
    """(m, c, I_c) of a random consistent body."""
    R, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    moments = rng.uniform(0.1, 1.0, 3)
    moments[2] = min(moments[2], moments[0] + moments[1])
    return rng.uniform(0.5, 3.0), rng.normal(size=3), R @ np.diag(moments) @ R.T


BODIES = [random_body(np.random.default_rng(seed)) for seed in range(6)]


@pytest.mark.parametrize("mass, com, inertia", BODIES)
def test_round_trips_between_every_pair_of_forms(mass, com, inertia):
    pi = parameters(mass, com, inertia)
    J = pseudo_inertia(pi)
    S = spatial_inertia(pi)
    np.testing.assert_allclose(about_com(mass, com, about_origin(mass, com, inertia)),
                               inertia, atol=1e-12)
    m, c, I_c = com_form(pi)
    np.testing.assert_allclose([m, *c], [mass, *com], atol=1e-12)
    np.testing.assert_allclose(I_c, inertia, atol=1e-12)
    np.testing.assert_allclose(parameters_of_pseudo(J), pi, atol=1e-12)
    np.testing.assert_allclose(dynamic_parameters(S), pi, atol=1e-12)
    np.testing.assert_allclose(spatial_pseudo_inertia(S), J, atol=1e-12)
    np.testing.assert_allclose(pseudo_inertia_of(mass, com, inertia), J, atol=1e-12)
    np.testing.assert_allclose(S, Inertia(mass, com, inertia).spatial(), atol=1e-12)
    np.testing.assert_allclose(spatial_inertia(parameters_of_pseudo(J)), S, atol=1e-12)


def test_forms_are_batched():
    masses = np.array([b[0] for b in BODIES])
    coms = np.array([b[1] for b in BODIES])
    tensors = np.array([b[2] for b in BODIES])
    batched = pseudo_inertia_of(masses, coms, tensors)
    for k, body in enumerate(BODIES):
        np.testing.assert_allclose(batched[k], pseudo_inertia_of(*body), atol=0)


@pytest.mark.parametrize("mass, com, inertia", BODIES)
def test_forms_agree_with_pinocchio(mass, com, inertia):
    body = pin.Inertia(mass, com, inertia)
    pi = parameters(mass, com, inertia)
    np.testing.assert_allclose(pi, body.toDynamicParameters(), atol=1e-12)
    back = pin.Inertia.FromDynamicParameters(pi)
    np.testing.assert_allclose(back.lever, com, atol=1e-12)
    np.testing.assert_allclose(back.inertia, inertia, atol=1e-12)
    # Pinocchio's 6x6 is (linear, angular), ours (angular, linear)
    order = [3, 4, 5, 0, 1, 2]
    np.testing.assert_allclose(spatial_inertia(pi), body.matrix()[np.ix_(order, order)],
                               atol=1e-12)
    if hasattr(pin, "PseudoInertia"):
        pseudo = pin.PseudoInertia.FromDynamicParameters(pi)
        np.testing.assert_allclose(pseudo_inertia(pi), pseudo.toMatrix(), atol=1e-12)
        np.testing.assert_allclose(parameters_of_pseudo(pseudo.toMatrix()),
                                   pseudo.toDynamicParameters(), atol=1e-12)
