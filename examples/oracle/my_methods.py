"""The in-house post-processors of ``my_postprocess`` registered as methods of Model 1, so
that ``dpopt compare`` runs them beside dpopt's exact methods and ``--check`` judges them::

    cd examples/oracle
    dpopt compare --import my_methods --family census --suite smoke \\
        --methods 'my-*,pwl-dp' --check

Both are registered as ``exact``: they claim the optimum, so ``--check`` compares their
objective with the certified one and fails (exit 1) where they disagree; ``solve`` calls a
point that breaks the model ``violated``, whatever the method claims.
"""

from __future__ import annotations

from typing import Any

from my_postprocess import top_down, top_down_rounded

import dpopt
from dpopt import Outcome
from dpopt.models.census import PostProcess


@dpopt.register(PostProcess, "my-topdown", "exact", 0.0, description="rounds each share")
def my_topdown(problem: PostProcess, *, time_limit: Any = None) -> Outcome:
    return Outcome(top_down(problem), "optimal")


@dpopt.register(PostProcess, "my-topdown-rounded", "exact", 0.0, description="largest remainder")
def my_topdown_rounded(problem: PostProcess, *, time_limit: Any = None) -> Outcome:
    return Outcome(top_down_rounded(problem), "optimal")
