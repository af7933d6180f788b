"""MuJoCo-style sparse L^T D L factorization of the mass matrix in tree order.

Conventions
-----------
* Dofs are in the model's tree order (parents first), and ``dof_parent[i]`` is the
  previous dof on the path from dof ``i`` to the root (-1 at a root), as
  :class:`~treedyn.engine.model.Model` stores it.
* ``M = L^T D L`` with ``L`` unit lower triangular and ``D`` diagonal positive (MuJoCo's
  ``mj_factorI``; Pinocchio's ``cholesky.decompose`` writes the same factor as
  ``M = U D U^T`` with ``U = L^T``). Row ``i`` of ``L`` is non-zero only at dof ``i`` and
  its ancestors, so eliminating the dofs from the last to the first (leaves before their
  parents) creates no fill-in: the factor's pattern is the lower half of M's structural
  pattern.
* The compressed layout is MuJoCo's ``M_rownnz``, ``M_rowadr``, ``M_colind``: row ``i``
  lists its ancestors in increasing order and then ``i`` itself (the diagonal last).
* Everything numeric is batched over a leading N: ``M`` (N, nv, nv) or (nv, nv).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np


class FactorStructure(NamedTuple):
    """MuJoCo's compressed lower-triangle layout of M and of its tree-ordered factor."""

    rownnz: np.ndarray  # (nv,) non-zeros in row i: its ancestors and itself
    rowadr: np.ndarray  # (nv,) start of row i in colind
    colind: np.ndarray  # (nnz,) column of each non-zero, rows concatenated

    @property
    def nnz(self) -> int:
        return int(len(self.colind))


class LTDL(NamedTuple):
    """The factor M = L^T D L: ``L`` (N, nv, nv) unit lower triangular, ``D`` (N, nv)."""

    L: np.ndarray
    D: np.ndarray


def ancestors(dof_parent: np.ndarray) -> list[np.ndarray]:
    """For each dof, its ancestor dofs in increasing order (itself excluded)."""
    chains: list[np.ndarray] = []
    for i, parent in enumerate(np.asarray(dof_parent, dtype=int)):
        chains.append(np.append(chains[parent], parent) if parent >= 0 else
                      np.zeros(0, dtype=int))
    return chains


def factor_structure(dof_parent: np.ndarray,
                     diagonal_only: np.ndarray | None = None) -> FactorStructure:
    """The compressed pattern (MuJoCo's M_rownnz, M_rowadr, M_colind) of M's lower half.

    ``diagonal_only`` (nv,) bool marks rows reduced to their diagonal: MuJoCo does this
    for the dofs of its "simple" bodies (``dof_simplenum > 0``: a leaf body without moving
    ancestors whose joints sit at its inertial frame on aligned axes, where the couplings
    vanish identically). By default every row holds all its ancestors.
    """
    chains = ancestors(dof_parent)
    if diagonal_only is not None:
        chains = [np.zeros(0, dtype=int) if reduce else chain
                  for chain, reduce in zip(chains, diagonal_only)]
    rows = [np.append(chain, i) for i, chain in enumerate(chains)]
    rownnz = np.array([len(row) for row in rows], dtype=int)
    rowadr = np.concatenate([[0], np.cumsum(rownnz)[:-1]]).astype(int)[:len(rows)]
    colind = np.concatenate(rows).astype(int) if rows else np.zeros(0, dtype=int)
    return FactorStructure(rownnz, rowadr, colind)


def ltdl(dof_parent: np.ndarray, M: np.ndarray) -> LTDL:
    """Factor M = L^T D L in tree order, from the last dof to the first (no fill-in).

    Only the structurally non-zero entries of M are read. A pivot that is not positive
    (M singular or indefinite) gives inf/nan in the factor rather than an error.
    """
    M = np.asarray(M, dtype=float)
    single = M.ndim == 2
    work = np.array(M[None] if single else M, dtype=float)
    chains = ancestors(dof_parent)
    nv = work.shape[-1]
    for k in reversed(range(nv)):
        pivot = work[:, k, k]
        with np.errstate(divide="ignore", invalid="ignore"):
            inverse = 1.0 / pivot
        for i in reversed(chains[k]):
            path = np.append(chains[i], i)  # i and its ancestors
            with np.errstate(invalid="ignore"):
                scale = work[:, k, i] * inverse  # (N,)
                work[:, i, path] -= scale[:, None] * work[:, k, path]
            work[:, k, i] = scale
    D = np.diagonal(work, axis1=1, axis2=2).copy()
    L = np.where(strict_lower_pattern(chains, nv), work, 0.0) + np.eye(nv)
    return LTDL(L[0], D[0]) if single else LTDL(L, D)


def strict_lower_pattern(chains: list[np.ndarray], nv: int) -> np.ndarray:
    """(nv, nv) bool: True at (i, j) when dof j is an ancestor of dof i."""
    pattern = np.zeros((nv, nv), dtype=bool)
    for i, chain in enumerate(chains):
        pattern[i, chain] = True
    return pattern


def ltdl_solve(dof_parent: np.ndarray, factor: LTDL, b: np.ndarray) -> np.ndarray:
    """x with M x = b through the factor: x = L^-1 D^-1 L^-T b (MuJoCo's mj_solveLD).

    ``b`` is (nv,) or (N, nv) matching the factor's batch; L is walked along the tree
    (each row only at its ancestors).
    """
    L, D = factor
    single = D.ndim == 1
    L = L[None] if single else L
    D = D[None] if single else D
    x = np.array(np.broadcast_to(b, D.shape), dtype=float)
    chains = ancestors(dof_parent)
    nv = D.shape[-1]
    for i in reversed(range(nv)):  # x <- L^-T x
        chain = chains[i]
        x[:, chain] -= L[:, i, chain] * x[:, i:i + 1]
    with np.errstate(divide="ignore", invalid="ignore"):
        x /= D  # x <- D^-1 x
    for i in range(nv):  # x <- L^-1 x
        chain = chains[i]
        x[:, i] -= np.einsum("nj,nj->n", L[:, i, chain], x[:, chain])
    return x[0] if single else x


def factor_nnz(dof_parent: np.ndarray) -> int:
    """Non-zeros of the tree-ordered factor, diagonal included (no fill-in)."""
    return factor_structure(dof_parent).nnz


def fill_in(pattern: np.ndarray, order: np.ndarray) -> int:
    """New off-diagonal non-zeros (pairs i > j) that eliminating the dofs in ``order`` creates.

    Symbolic Gaussian elimination on the graph of ``pattern`` (nv, nv) bool: eliminating a
    dof connects all of its not-yet-eliminated neighbours. Tree order from the leaves
    (``order = nv-1 .. 0``) creates none; eliminating a root first couples all its
    branches (the textbook's star example).
    """
    graph = np.array(pattern, dtype=bool)
    np.fill_diagonal(graph, False)
    remaining = np.ones(len(graph), dtype=bool)
    created = 0
    for k in order:
        remaining[k] = False
        neighbours = np.flatnonzero(graph[k] & remaining)
        block = graph[np.ix_(neighbours, neighbours)]
        missing = ~block
        np.fill_diagonal(missing, False)
        created += int(missing.sum()) // 2
        graph[np.ix_(neighbours, neighbours)] = True
        np.fill_diagonal(graph, False)
    return created


def eliminate(M: np.ndarray, order: np.ndarray) -> np.ndarray:
    """The numeric Schur-complement updates of eliminating ``order`` from one M (nv, nv).

    Returns the matrix after every elimination step has updated the remaining block, with
    the eliminated rows/columns left as they were when eliminated; entries that were
    structurally zero and are now non-zero are the fill-in values (e.g. -0.4 * 0.4 / 4 =
    -0.04 in the textbook's star tree when the root goes first).
    """
    work = np.array(M, dtype=float)
    remaining = np.ones(len(work), dtype=bool)
    for k in order:
        remaining[k] = False
        rest = np.flatnonzero(remaining)
        work[np.ix_(rest, rest)] -= np.outer(work[rest, k], work[k, rest]) / work[k, k]
    return work
