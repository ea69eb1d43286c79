"""Census SF1 / SF1+ workloads of HDMM Tables 6–7 (McKenna et al., §11.2).

- Building blocks (McKenna et al., §11.2): ``race1`` 7×64, ``race2`` 70×64, ``white``, ``is_hisp``,
  ``not_hisp``, ``adult``, ``age1`` (23 ranges), ``age3`` (103 rows), each a small dense
  matrix in ``wl.Explicit``.
- :func:`sf1_workload`: the 33 product terms on (sex 2, hispanic 2, race 64, age 115), m = 4151;
  :func:`sf1_plus_workload`: the same terms ⊗ [I₅₁; T₅₁] (state), m = 215,852. The tables use
  this 4-D domain (relationship(17) dropped; docs/families/hdmm.md#hdmm-census-domain) and keep P1
  repeated, as listed.
- Their baseline columns are computed by :mod:`dpopt.hdmm_columns`.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from dpopt import workload as wl

__all__ = [
    "PAPER_SF1",
    "SF1_DOMAIN",
    "STATES",
    "sf1_blocks",
    "sf1_plus_workload",
    "sf1_workload",
]

SF1_DOMAIN = (2, 2, 64, 115)  # sex, hispanic, race (6 race bits merged), age
STATES = 51

# Tables 6 (Laplace) and 7 (Gaussian), Census rows, RMSE at ε = 1 (δ = 1e-6); McKenna et al., §11.2.
# "workload" is the A = W column headed "Laplace" (the Gaussian mechanism in Table 7).
PAPER_SF1 = {
    ("laplace", "sf1"): {
        "identity": 23.20,
        "workload": 70.71,
        "kron": 7.30,
        "union": 30.55,
        "marginals": 9.56,
        "hdmm": 7.30,
    },
    ("laplace", "sf1+"): {
        "identity": 32.50,
        "workload": 141.42,
        "kron": 10.23,
        "union": 42.31,
        "marginals": 12.88,
        "hdmm": 10.23,
    },
    ("gaussian", "sf1"): {
        "identity": 69.33,
        "workload": 29.87,
        "kron": 9.80,
        "union": 75.66,
        "marginals": 14.31,
        "hdmm": 9.80,
    },
    ("gaussian", "sf1+"): {
        "identity": 97.08,
        "workload": 42.25,
        "kron": 10.90,
        "union": 84.16,
        "marginals": 15.88,
        "hdmm": 10.90,
    },
}

AGE1_CUTS = (
    *(0, 5, 10, 15, 18, 20, 21, 22, 25, 30, 35, 40, 45),
    *(50, 55, 60, 62, 65, 67, 70, 75, 80, 85, 115),
)
"""age1: the 23 ranges [cuts[k], cuts[k+1]) of McKenna et al., §11.2."""


def _ranges(cuts: np.ndarray, n: int) -> np.ndarray:
    """Rows [cuts[k], cuts[k+1]) as 0/1 indicators on n cells."""
    cells = np.arange(n)
    return ((cuts[:-1, None] <= cells) & (cells < cuts[1:, None])).astype(np.float64)


def sf1_blocks() -> dict[str, wl.Explicit]:
    """The SF1 predicate blocks of McKenna et al., §11.2 (race code = 6 bits, one per race; bit k =
    2^k)."""
    codes = np.arange(64)
    races = np.array([bin(c).count("1") for c in codes])
    single = (codes[None, :] == 2 ** np.arange(6)[:, None]).astype(np.float64)
    race1 = np.vstack([single, 1.0 - single.sum(axis=0)])  # 6 single races, every other code
    race2 = np.vstack(
        [
            (codes[None, :] == np.arange(1, 64)[:, None]),  # each code 1–63
            (races[None, :] == np.arange(1, 7)[:, None]),  # exactly k races, k = 1…6
            (races >= 2)[None, :],  # two or more races
        ]
    ).astype(np.float64)
    age3_cuts = np.concatenate([np.arange(101), [105, 110, 115]])
    blocks = {
        "race1": race1,
        "race2": race2,
        "white": (codes == 1).astype(np.float64)[None, :],
        "is_hisp": np.array([[1.0, 0.0]]),
        "not_hisp": np.array([[0.0, 1.0]]),
        "adult": (np.arange(115) >= 18).astype(np.float64)[None, :],
        "age1": _ranges(np.array(AGE1_CUTS), 115),
        "age3": _ranges(age3_cuts, 115),
    }
    return {name: wl.Explicit(matrix) for name, matrix in blocks.items()}


# The 33 terms (sex, hispanic, race, age) of McKenna et al., §11.2, table by table: "I" Identity,
# "T" Total, "IT" [I; T], anything else a block of sf1_blocks. P1 is repeated as listed.
P1 = ("T", "T", "T", "T")
SF1_TERMS = (
    P1,
    ("T", "T", "race1", "T"),  # P3
    P1,
    ("T", "I", "T", "T"),  # P4
    P1,
    ("T", "I", "race1", "T"),  # P5
    ("T", "IT", "T", "T"),
    ("T", "T", "race2", "T"),  # P8
    P1,
    ("T", "I", "T", "T"),  # P9
    ("T", "not_hisp", "race2", "T"),
    P1,
    ("T", "T", "race2", "adult"),  # P10
    ("T", "T", "T", "adult"),
    ("T", "I", "T", "adult"),  # P11
    ("T", "not_hisp", "race2", "adult"),
    ("T", "T", "T", "adult"),
    ("I", "T", "T", "age1"),  # P12
    ("IT", "T", "T", "T"),
    ("I", "T", "race1", "age1"),  # P12A–I
    ("IT", "T", "race1", "T"),
    ("I", "is_hisp", "T", "age1"),
    ("IT", "is_hisp", "T", "T"),
    ("I", "not_hisp", "white", "age1"),
    ("IT", "not_hisp", "white", "T"),
    ("I", "T", "T", "age3"),  # PCT12
    ("IT", "T", "T", "T"),
    ("I", "T", "race1", "age3"),  # PCT12A–O
    ("IT", "T", "race1", "T"),
    ("I", "is_hisp", "T", "age3"),
    ("IT", "is_hisp", "T", "T"),
    ("I", "not_hisp", "race1", "age3"),
    ("IT", "not_hisp", "race1", "T"),
)


def _factor(name: str, n: int, blocks: dict[str, wl.Explicit]) -> wl.Matrix:
    simple: dict[str, Callable[[int], wl.Matrix]] = {
        "I": wl.Identity,
        "T": wl.Total,
        "IT": wl.IdentityTotal,
    }
    return simple[name](n) if name in simple else blocks[name]


def _terms(extra: tuple[wl.Matrix, ...]) -> wl.VStack:
    blocks = sf1_blocks()  # one instance per block, so the terms share their Grams
    return wl.VStack(
        [
            wl.Kron(
                [*(_factor(f, n, blocks) for f, n in zip(term, SF1_DOMAIN, strict=True)), *extra]
            )
            for term in SF1_TERMS
        ]
    )


def sf1_workload() -> wl.VStack:
    """SF1: the 33 product terms on (2, 2, 64, 115), m = 4151 (McKenna et al., §11.2)."""
    return _terms(())


def sf1_plus_workload() -> wl.VStack:
    """SF1+: every SF1 term ⊗ [I₅₁; T₅₁] (national and per-state), m = 215,852 (McKenna et al.,
    §11.2)."""
    return _terms((wl.IdentityTotal(STATES),))
