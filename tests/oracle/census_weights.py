"""Hypothesis strategy for Model 1's region weights, shared by the census oracle tests."""

from __future__ import annotations

import numpy as np
from hypothesis import event
from hypothesis import strategies as st

from dpopt.hierarchy import Tree
from dpopt.models.census.problems import leaf_weights


@st.composite
def region_weights(draw: st.DrawFn, tree: Tree) -> np.ndarray | None:
    """Objective weights: none (the paper's H1), the leaves below each region (the census
    default), or random ones, small (many equal slopes) or large, leaves included."""
    kind = draw(st.sampled_from(["none", "leaves", "small", "large"]))
    event(f"{kind} weights")
    if kind == "none":
        return None
    if kind == "leaves":
        return leaf_weights(tree)
    top = 3 if kind == "small" else 1000
    return np.array(draw(st.lists(st.integers(1, top), min_size=tree.size, max_size=tree.size)))
