"""GReM-LNN (Mullins et al., "Efficient and Private Marginal Reconstruction with Local
Non-Negativity", NeurIPS 2024) run on one residual measurement written by
``benchmarks/publishable_marginals.py``.

    GREM_LNN_SRC=/path/to/efficient-marginal-reconstruction/src \\
        /path/to/venv-with-torch/bin/python benchmarks/peers/grem_lnn.py IN.npz OUT.npz

The peer's package (``rem``) is not part of dpopt and is never vendored: it is imported from
``--src`` or ``GREM_LNN_SRC`` and runs in its own environment (torch, linear_operator). This
script only translates the measurement into the peer's inputs and its output back.

The translation. dpopt measures every closure member A as r̂_A, a table on A centred along
every axis, with covariance u_A·P_A (P_A = ⊗Pᵢ the centring). The peer's residual of A is
y_A = D_A t_A with D_A = ⊗Dᵢ, Dᵢ the (nᵢ − 1) × nᵢ consecutive-difference matrix
(Dᵢ x)_j = x_j − x_{j+1}, and noise of covariance σ_A²·D_A D_Aᵀ. As Dᵢ 1 = 0, D_A t_A =
D_A r_A, so y_A = D_A r̂_A with σ_A² = u_A is exactly the same measurement, and the peer's
objective Σ_A σ_A⁻² (y_A − α_A)ᵀ (D_A D_Aᵀ)⁺ (y_A − α_A) equals dpopt's Σ_A ‖r_A − r̂_A‖²/u_A
at r_A = D_A⁺ α_A. The residuals the peer returns are mapped back by D_A⁺ (``residuals`` in
the output) so the caller can evaluate them in dpopt's model.

Weights. The peer's ``gremLNN`` class ignores the variances it is given and weighs residual
A by σ_A = 2^|A|; ``--weights published`` runs that class as it is. The default,
``--weights measured``, runs the same solver (``dualAscent``) with σ_A² = u_A: the maximum
likelihood model of the measurement. Both use ``gremLNN.solve``'s defaults: 4001 rounds,
λ₀ = −0.1, step t = 1 divided by 10 after a NaN, early stopping at |Σλ·μ| < 0.01 after 400
rounds, and the check every 100 rounds (after 200) that stops once the negative mass of the
target tables is above −1; ``--step`` overrides t (the peer's demo uses 0.01) and
``--rounds`` the rounds (a few rounds time one iteration on a workload too large to finish).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np


def attributes(rows: np.ndarray, d: int) -> list[tuple[int, ...]]:
    """Attribute tuples of rows padded with d."""
    return [tuple(int(a) for a in row if a < d) for row in rows]


def difference(table: np.ndarray) -> np.ndarray:
    """D_A applied to a table: x_j − x_{j+1} along every axis."""
    out = table
    for axis in range(table.ndim):
        out = -np.diff(out, axis=axis)
    return out


def difference_pinv(values: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """D_A⁺ applied to a flat residual of shape Π(nᵢ − 1): a table of ``shape``."""
    out = values.reshape(tuple(n - 1 for n in shape)) if shape else values.reshape(())
    for axis, n in enumerate(shape):
        d_matrix = np.eye(n - 1, n) - np.eye(n - 1, n, k=1)
        pinv = np.linalg.pinv(d_matrix)  # n × (n − 1)
        out = np.moveaxis(np.tensordot(pinv, out, axes=([1], [axis])), 0, axis)
    return out


def run(data: Any, rem_src: str, weights: str, step: float, rounds: int) -> dict[str, Any]:
    """The peer's non-negative reconstruction of the measurement in ``data``."""
    sys.path.insert(0, rem_src)
    import torch
    from rem.algebra import MarginalWorkload, ResidualWorkload2, VStack
    from rem.domain import Domain
    from rem.dual_ascent import dualAscent
    from rem.reconstruction import gremLNN

    sizes = [int(n) for n in data["sizes"]]
    d = len(sizes)
    names = [f"a{i:04d}" for i in range(d)]
    domain = Domain(names, sizes)
    members = attributes(data["members"], d)
    workload = attributes(data["marginals"], d)
    offsets = data["noisy_offsets"]
    noisy = data["noisy"]
    y = []
    for i, member in enumerate(members):
        shape = tuple(sizes[a] for a in member)
        table = noisy[offsets[i] : offsets[i + 1]].reshape(shape)
        y.append(torch.tensor(np.atleast_1d(difference(table)).ravel(), dtype=torch.float32))
    sigmas = [float(s) for s in np.sqrt(data["variances"])]
    tup = {m: tuple(names[a] for a in m) for m in set(members) | set(workload)}
    # the non-negativity of a marginal contained in another workload marginal is implied
    maximal = [m for m in workload if not any(set(m) < set(o) for o in workload)]
    start = time.perf_counter()
    residuals = VStack([ResidualWorkload2(tup[m], domain) for m in members])
    targets = VStack([MarginalWorkload(tup[m], domain) for m in maximal])
    if weights == "published":
        peer = gremLNN(targets, residuals, y, sigmas)
        optimizer = peer.optimizer
    else:
        optimizer = dualAscent(
            [tup[m] for m in members], [tup[m] for m in maximal], y, sigmas, domain
        )
    t, restarts = step, 0
    with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink):
        while True:  # gremLNN.solve → dualAscent.solveLooping, counted
            result = optimizer.solve_regularization(
                rounds=rounds, lam=-0.1, t=t, early_stopping=0.01, reg_param=1
            )
            if result == "done":
                break
            t, restarts = t / 10, restarts + 1
    solved = time.perf_counter()
    z = [optimizer.y_opt_dict[m] for m in optimizer.R_Q]
    everything = VStack([MarginalWorkload(tup[m], domain) for m in workload])
    with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink):
        tables = (everything @ optimizer.residuals_all.pinv()) @ z
    seconds = time.perf_counter() - start
    values = np.concatenate([np.asarray(t.detach().numpy(), dtype=np.float64) for t in tables])
    by_name = {v: k for k, v in tup.items()}
    residual_tables = {}
    for name, alpha in optimizer.y_opt_dict.items():
        m = by_name[name]
        shape = tuple(sizes[a] for a in m)
        flat = np.asarray(alpha.detach().numpy() if hasattr(alpha, "detach") else alpha, float)
        residual_tables[m] = difference_pinv(flat.ravel(), shape)
    flat_residuals = np.concatenate([residual_tables[m].ravel() for m in members])
    return {
        "tables": values,
        "residuals": flat_residuals,
        "seconds": seconds,
        "solve_seconds": solved - start,
        "peer_seconds": float(optimizer.running_time),
        "iterations": len(optimizer.stats[2]),
        "restarts": restarts,
        "step": t,
        "weights": weights,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("input", type=Path, help="the measurement (.npz)")
    parser.add_argument("output", type=Path, help="where the peer's tables go (.npz)")
    parser.add_argument("--src", default=os.environ.get("GREM_LNN_SRC"), help="the peer's src/")
    parser.add_argument("--weights", choices=["measured", "published"], default="measured")
    parser.add_argument("--step", type=float, default=1.0, help="the dual step t (default 1)")
    parser.add_argument("--rounds", type=int, default=4001, help="rounds per run (default 4001)")
    args = parser.parse_args()
    if not args.src:
        parser.error("give --src or GREM_LNN_SRC: the folder holding the peer's rem package")
    with np.load(args.input) as data:
        out = run(dict(data), args.src, args.weights, args.step, args.rounds)
    np.savez(args.output, **out)


if __name__ == "__main__":
    main()
