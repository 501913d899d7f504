"""Level-independent quasi-birth-death processes with a boundary: matrix-geometric solution (§5.3).

Levels n = 0, 1, 2, ...; every level has the same m phases. For n < b the blocks are given per
level (up U_n, local L_n, down D_n to level n-1); from level b on they repeat: up A0, local A1,
down A2. Local blocks carry only off-diagonal rates here; the diagonal is filled in so that every
row of the generator sums to 0.

Matrix-geometric solution (Neuts 1981; Latouche & Ramaswami 1999, refs [34, 43] of berg2020):
pi_n = pi_b R^(n-b) for n >= b, where R is the minimal non-negative solution of
A0 + R A1 + R^2 A2 = 0. R is obtained from G (the minimal solution of A2 + A1 G + A0 G^2 = 0),
computed by Latouche & Ramaswami's logarithmic reduction (quadratically convergent), as
R = A0 (-(A1 + A0 G))^-1.
The boundary vectors pi_0..pi_b solve the balance equations of levels 0..b together with the
normalization sum_{n<b} pi_n 1 + pi_b (I - R)^-1 1 = 1.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from schedlab.analysis.elastic.model import ElasticModelError


@dataclass(frozen=True)
class QBDSolution:
    boundary: list[np.ndarray]  # pi_0 .. pi_b
    R: np.ndarray
    iterations: int
    residual: float  # ||A0 + R A1 + R^2 A2||_max

    @property
    def b(self) -> int:
        return len(self.boundary) - 1

    def _inv(self) -> np.ndarray:
        return np.linalg.inv(np.eye(self.R.shape[0]) - self.R)

    def total_probability(self) -> float:
        head = sum(float(p.sum()) for p in self.boundary[:-1])
        return head + float(self.boundary[-1] @ self._inv() @ np.ones(self.R.shape[0]))

    def mean_level(self) -> float:
        """E[level] = sum_{n<b} n pi_n 1 + pi_b (b (I-R)^-1 + R (I-R)^-2) 1."""
        one = np.ones(self.R.shape[0])
        inv = self._inv()
        head = sum(n * float(p.sum()) for n, p in enumerate(self.boundary[:-1]))
        tail = self.boundary[-1] @ (self.b * inv + self.R @ inv @ inv) @ one
        return head + float(tail)

    def level(self, n: int) -> np.ndarray:
        """pi_n."""
        if n <= self.b:
            return self.boundary[n]
        return self.boundary[-1] @ np.linalg.matrix_power(self.R, n - self.b)

    def phase_probabilities(self) -> np.ndarray:
        """Stationary probability of each phase, summed over all levels."""
        return sum(self.boundary[:-1]) + self.boundary[-1] @ self._inv()


def _with_diagonal(up: np.ndarray, local: np.ndarray, down: np.ndarray) -> np.ndarray:
    """The local block with its diagonal set so that the generator's rows sum to 0."""
    local = local.copy()
    np.fill_diagonal(local, 0.0)
    np.fill_diagonal(local, -(up.sum(axis=1) + local.sum(axis=1) + down.sum(axis=1)))
    return local


def logarithmic_reduction(
    A0: np.ndarray, A1: np.ndarray, A2: np.ndarray, *, tol: float = 1e-14, max_iter: int = 200
) -> tuple[np.ndarray, int]:
    """G, the minimal solution of A2 + A1 G + A0 G^2 = 0 (A1 with its diagonal), by logarithmic
    reduction (Latouche & Ramaswami 1993, continuous-time form)."""
    m = A1.shape[0]
    eye = np.eye(m)
    inv = np.linalg.inv(-A1)
    B0 = inv @ A0  # one level up
    B2 = inv @ A2  # one level down
    G = B2.copy()
    T = B0.copy()
    for it in range(1, max_iter + 1):
        U = B0 @ B2 + B2 @ B0
        M = np.linalg.inv(eye - U)
        B0 = M @ (B0 @ B0)
        B2 = M @ (B2 @ B2)
        G = G + T @ B2
        T = T @ B0
        if np.max(np.abs(1.0 - G.sum(axis=1))) < tol or np.max(np.abs(T)) < tol:
            return G, it
    raise ElasticModelError("logarithmic reduction did not converge (is the QBD stable?)")


def solve_qbd(
    boundary_blocks: list[tuple[np.ndarray, np.ndarray, np.ndarray]],
    A0: np.ndarray,
    A1_offdiag: np.ndarray,
    A2: np.ndarray,
) -> QBDSolution:
    """Stationary distribution of the QBD.

    ``boundary_blocks[n] = (U_n, L_n, D_n)`` for levels n = 0..b-1 (D_0 is ignored); levels
    n >= b have blocks A0 (up), A1_offdiag (local, off-diagonal), A2 (down).
    """
    m = A0.shape[0]
    b = len(boundary_blocks)
    A1 = _with_diagonal(A0, A1_offdiag, A2)
    # Stability (drift condition): a A0 1 < a A2 1 for the stationary vector a of A0 + A1 + A2.
    A = A0 + A1 + A2
    system = np.vstack([A.T[:-1], np.ones(m)])
    rhs = np.zeros(m)
    rhs[-1] = 1.0
    a = np.linalg.lstsq(system, rhs, rcond=None)[0]
    up, down = float(a @ A0.sum(axis=1)), float(a @ A2.sum(axis=1))
    if up >= down:
        raise ElasticModelError(
            f"the QBD is not positive recurrent (drift up {up:.6g} >= down {down:.6g})"
        )
    G, iterations = logarithmic_reduction(A0, A1, A2)
    R = A0 @ np.linalg.inv(-(A1 + A0 @ G))
    residual = float(np.max(np.abs(A0 + R @ A1 + R @ R @ A2)))
    # Balance equations of levels 0..b: x M = 0 with x = [pi_0, ..., pi_b].
    size = (b + 1) * m
    M = np.zeros((size, size))

    def blk(r: int, c: int) -> tuple[slice, slice]:
        return slice(r * m, (r + 1) * m), slice(c * m, (c + 1) * m)

    zero = np.zeros((m, m))
    for n, (U, L, D) in enumerate(boundary_blocks):
        down_n = D if n > 0 else zero
        M[blk(n, n)] = _with_diagonal(U, L, down_n)
        M[blk(n, n + 1)] = U
        if n > 0:
            M[blk(n, n - 1)] = down_n
    M[blk(b, b)] = A1 + R @ A2
    if b > 0:
        M[blk(b, b - 1)] = A2
    # Replace one balance equation by the normalization.
    norm = np.concatenate([np.ones(b * m), np.linalg.inv(np.eye(m) - R) @ np.ones(m)])
    M[:, 0] = norm
    rhs = np.zeros(size)
    rhs[0] = 1.0
    x = np.linalg.solve(M.T, rhs)
    x = np.where(np.abs(x) < 1e-300, 0.0, x)
    pis = [x[n * m : (n + 1) * m] for n in range(b + 1)]
    return QBDSolution(boundary=pis, R=R, iterations=iterations, residual=residual)
