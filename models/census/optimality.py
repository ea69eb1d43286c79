"""Model 1's exact optimality check by node potentials (Fioretto et al., §5;
docs/families/census.md#census-domains).

Model 1 is a separable convex cost flow: a dummy root s sends the public total n down k copies of
the region tree (one per group size); the flow on the arc into cell (r, size) is its count x and
costs f(x) = w_r (x − c̃)² (the region weights of
:class:`~dpopt.models.census.problems.PostProcess`, all 1 in the paper's H1); each leaf passes its
flow on to a sink t, and t returns n to s. For such a flow, an integer point x is optimal if and
only if its residual network, with the one-unit marginal costs as arc lengths, has no negative cycle
(Ahuja, Magnanti & Orlin, *Network Flows*, §14.2), that is, if and only if there are node potentials
π with

    −f⁺(x_r) ≤ π_parent(r) − π_r ≤ f⁻(x_r)      for every cell r,

where f⁺ = f(x + 1) − f(x) = w(2(x − c̃) + 1) unless x is at its upper bound (then −f⁺ = −∞),
f⁻ = f(x − 1) − f(x) = w(1 − 2(x − c̃)) unless x is at its lower bound (then +∞), and π_t = 0
on the sink, where every leaf's flow ends. The arc t → s carries the fixed n and constrains
nothing. With t pinned, the constraints form a tree below s, so they are feasible if and only
if the intervals computed bottom-up are never empty: a leaf r allows its parent the potentials
C_r = [−f⁺(x_r), f⁻(x_r)], an internal cell the intersection J_r of its children's C, shifted
by its own arc, C_r = J_r + [−f⁺(x_r), f⁻(x_r)], and s needs ∩ over the sizes of C_root ≠ ∅.

With the bounds of the domains D this checks that x is optimal for the restricted model the DP
solves; with Model 1's own bounds [0, n] it decides whether x is also optimal for the
unrestricted Model 1 — exactly, in both directions (``tests/oracle/test_domain_certificate.py``
checks both against CP-SAT). The intervals compose: a partition's root interval is all the
driver of a partitioned solve needs (:mod:`dpopt.solvers.census.partitioned`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from dpopt.hierarchy import Tree
from dpopt.validation import broadcast, instance, real_array

__all__ = ["certified"]

Interval = tuple[np.ndarray, np.ndarray]


def arc_interval(
    noisy: np.ndarray, x: np.ndarray, lower: np.ndarray, upper: np.ndarray, weight: Any = 1
) -> Interval:
    """[−f⁺(x), f⁻(x)] for f(x) = weight·(x − noisy)², with ∓∞ where x sits on a bound."""
    weight = np.asarray(weight, dtype=np.float64)
    step = 2.0 * np.subtract(x, noisy).astype(np.float64)  # exact for integer counts past 2**53
    low = np.where(x < upper, -weight * (step + 1.0), -np.inf)
    high = np.where(x > lower, weight * (1.0 - step), np.inf)
    return low, high


def upward_interval(
    tree: Tree,
    noisy: np.ndarray,
    x: np.ndarray,
    lower: np.ndarray,
    upper: np.ndarray,
    weight: Any = 1,
) -> Interval:
    """C of the tree's root: the potentials its parent may take (empty, lo > hi, when some
    cell of the tree already has no feasible potential). Arrays are (regions,) or (regions,
    columns), ``weight`` broadcasts to them; the result has one entry per column."""
    low, high = arc_interval(noisy, x, lower, upper, weight)
    # J of the internal cells, level by level from the deepest, then C = J + the own arc
    for parents, kids, starts in tree.bottom_up:
        joint = (
            np.maximum.reduceat(low[kids], starts, axis=0),
            np.minimum.reduceat(high[kids], starts, axis=0),
        )
        low[parents], high[parents] = _lift(joint, (low[parents], high[parents]))
    return low[tree.root], high[tree.root]


def parent_interval(children: Sequence[Interval], own: Interval) -> Interval:
    """C of a cell from its children's C and its own arc (elementwise over columns): how a
    partitioned solve's driver joins its partitions' root intervals."""
    joint = (
        np.max([np.asarray(low) for low, _ in children], axis=0),
        np.min([np.asarray(high) for _, high in children], axis=0),
    )
    return _lift(joint, own)


def _lift(joint: Interval, own: Interval) -> Interval:
    """C = J + the own arc's interval, kept empty where J is."""
    empty = joint[0] > joint[1]
    with np.errstate(invalid="ignore"):  # ∞ − ∞ only where empty, which is overwritten
        return np.where(empty, np.inf, joint[0] + own[0]), np.where(
            empty, -np.inf, joint[1] + own[1]
        )


def feasible_at_root(interval: Interval) -> bool:
    """Whether the dummy root s has a potential: ∩ over the sizes of the roots' C ≠ ∅."""
    return bool(np.max(interval[0]) <= np.min(interval[1]))


def certified(
    tree: Tree, noisy: np.ndarray, x: np.ndarray, lower: Any, upper: Any, weights: Any = 1
) -> bool:
    """Whether the feasible point ``x`` (regions × sizes) is optimal for Model 1 with the
    per-cell bounds ``lower`` … ``upper`` (broadcast to ``x``; 0 … n for the unrestricted model)
    and the region ``weights`` (one per region, or 1: the paper's objective)."""
    instance("tree", tree, Tree)
    x, noisy = real_array("x", x), real_array("noisy", noisy)
    if x.ndim not in (1, 2) or x.shape[0] != tree.size or noisy.shape != x.shape:
        raise ValueError(
            f"x and noisy must be arrays of one row per region ({tree.size}) of the same "
            f"shape, got {x.shape} and {noisy.shape}"
        )
    lower = broadcast("lower", real_array("lower", lower), x.shape)
    upper = broadcast("upper", real_array("upper", upper), x.shape)
    weight = real_array("weights", weights)
    if weight.ndim == 1 and x.ndim == 2:  # one weight per region, over the columns
        weight = weight[:, None]
    broadcast("weights", weight, x.shape)
    return feasible_at_root(upward_interval(tree, noisy, x, lower, upper, weight))
