"""The HDMM compare suites (hdmm spec §5): smoke, the 1-D tables, the multi-dimensional tables."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from dpopt import workload as wl
from dpopt.compare.instance import Instance
from dpopt.hdmm import gram_of
from dpopt.models.matrix_mechanism import ProductStrategySelection, StrategySelection
from dpopt.paper import hdmm_tables as tables
from dpopt.privacy import NOISES


def _table_instances(sizes: tuple[int, ...]) -> Callable[[np.random.Generator], list[Instance]]:
    def instances(rng: np.random.Generator) -> list[Instance]:
        out = []
        for (noise, name), values in tables.PAPER_OPT0.items():
            for n in sizes:
                workload = tables.one_d_workload(name, n)
                problem = StrategySelection(gram_of(workload), noise)
                reference = tables.paper_reference(noise, values[n], workload.shape[0])
                out.append(
                    Instance(
                        f"table{4 if noise == 'laplace' else 5}-{name}-{n}",
                        problem,
                        reference=reference,
                        reference_tol=tables.TABLE_TOL,
                    )
                )
        return out

    return instances


def _smoke(rng: np.random.Generator) -> list[Instance]:
    return [
        Instance(
            f"{name}-16-{noise}", StrategySelection(gram_of(tables.one_d_workload(name, 16)), noise)
        )
        for name in ("prefix", "all-range")
        for noise in NOISES
    ]


def _opt0_timing(rng: np.random.Generator) -> list[Instance]:
    """The issue's timing target: p-Identity, p = n/16, one restart, on AllRange(n)."""
    return [
        Instance(
            f"allrange-{n}-one-restart",
            StrategySelection(wl.AllRange(n).gram().dense()),
            options={"opt0-laplace": {"restarts": 1}},
        )
        for n in (1024, 2048)
    ]


def _cps_instances(rng: np.random.Generator) -> list[Instance]:
    out = []
    for (noise, name), value in tables.PAPER_CPS.items():
        workload = tables.cps_workload(name)
        rows = workload.shape[0]
        problem = ProductStrategySelection(wl.union_of_kron_terms(workload), noise, rows)
        out.append(
            Instance(
                f"table{6 if noise == 'laplace' else 7}-cps-{name}",
                problem,
                reference=tables.paper_reference(noise, value, rows),
                reference_tol=tables.TABLE_TOL,
            )
        )
    return out


def _paper_md_instances(rng: np.random.Generator) -> list[Instance]:
    out = _cps_instances(rng)
    for label, noise, workload, paper in tables.marginal_table_workloads():
        rows = workload.shape[0]
        problem = ProductStrategySelection(wl.union_of_kron_terms(workload), noise, rows)
        out.append(
            Instance(
                f"table{6 if noise == 'laplace' else 7}-{label}",
                problem,
                reference=tables.paper_reference(noise, paper[noise], rows),
                reference_tol=tables.TABLE_TOL,
                options={"opt-marginals": {"restarts": 3}},  # spec §5.2: 3 restarts on Adult
            )
        )
    return out


SUITES: dict[str, Callable[[np.random.Generator], list[Instance]]] = {
    "smoke": _smoke,
    "small": _table_instances((64,)),
    "tables": _table_instances((64, 256, 1024)),
    "tables-md": _paper_md_instances,
    "opt0-timing": _opt0_timing,
}
