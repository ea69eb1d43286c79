"""A DGM release on disk (docs/families/dgm.md, "Your own data"; docs/design.md, "Releases on
disk"): :func:`save_release` writes a :class:`~dpopt.dgm.Learned` network as a
:mod:`dpopt.release_dir` directory — ``network.bif`` (the learned network), ``cpds.csv`` (one
row per CPD entry: node, parent configuration, state, probability) and the manifest with the
public structure and the budget split — and :func:`check_release`, registered in
``release_dir.FAMILY_CHECKS``, is what ``dpopt check DIR`` runs on its tables.

The manifest records sensitivity 1 for every Stage-II (and D-Ind) table, so the common check
recomputes their ε = 1/λ; Stage I's tables of the paper objective are recorded without one
(their cost is amplified by sampling) and :func:`check_release` recomputes their amplified
cost at the recorded sampling rate (:func:`dpopt.dgm.contract.table_noise_errors`).
"""

from __future__ import annotations

import hashlib
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from dpopt import release_dir
from dpopt.dgm.contract import cpd_errors, table_noise_errors
from dpopt.dgm.learning import Learned
from dpopt.dgm.networks import Network
from dpopt.paths import regular_file
from dpopt.progress import Progress
from dpopt.validation import instance

__all__ = ["BIF", "CPDS", "check_release", "cpd_table", "save_release"]

BIF = "network.bif"
"""The learned network, as BIF (:meth:`~dpopt.dgm.Network.bif_text`)."""
CPDS = "cpds.csv"
"""The learned CPDs as a table (:func:`cpd_table`)."""
KEYS = ["node", "parents", "state"]


def _configurations(network: Network, i: int) -> list[str]:
    """Node ``i``'s parent configurations as ``"p1=s1;p2=s2"`` ("" for a root), the first
    parent's state changing slowest (the order of the CPD's rows)."""
    given = network.parents[i]
    return [
        ";".join(
            f"{network.nodes[p]}={network.states[p][k]}" for p, k in zip(given, at, strict=True)
        )
        for at in np.ndindex(network.table_shape(i)[:-1])
    ]


def _keys(network: Network) -> list[tuple[str, str, str]]:
    """(node, parent configuration, state) of every CPD entry, in the CPDs' row-major order."""
    return [
        (node, config, state)
        for i, node in enumerate(network.nodes)
        for config in _configurations(network, i)
        for state in network.states[i]
    ]


def cpd_table(network: Network) -> Any:
    """The CPDs of ``network`` as a DataFrame: one row per entry, with columns ``node``,
    ``parents`` (the configuration, ``"p1=s1;p2=s2"``; empty for a root), ``state`` and
    ``probability``."""
    import pandas as pd

    cpds = instance("network", network, Network).require_cpds("cpd_table")
    frame = pd.DataFrame(_keys(network), columns=KEYS)
    frame["probability"] = np.concatenate([np.ravel(cpd) for cpd in cpds])
    return frame


def _structure(network: Network) -> list[dict[str, Any]]:
    return [
        {"node": node, "parents": [network.nodes[p] for p in given], "states": list(states)}
        for node, given, states in zip(network.nodes, network.parents, network.states, strict=True)
    ]


def _public(learned: Learned) -> dict[str, Any]:
    """The public facts of the release: the structure (nodes in order, their parents and
    states), the objective and the budget split (ε^I of Stage I and its sampling rate β, and
    each node's Stage-II ε_i, exact)."""
    network = learned.network
    spent = Fraction(learned.budget.to_dict()["exact"]["spent"])
    paper = learned.objective == "paper"
    return {
        "network": network.name,
        "structure": _structure(network),
        "objective": learned.objective,
        "stage_one": {
            "epsilon_I": str(spent - sum(learned.allocation)),
            "sampling_rate": str(learned.settings.sampling_rate),
        }
        if paper
        else None,
        "allocation": {
            node: str(share) for node, share in zip(network.nodes, learned.allocation, strict=True)
        },
    }


def save_release(learned: Learned, out_dir: Any) -> Path:
    """Write ``learned`` to the directory ``out_dir`` (:func:`dpopt.release_dir.begin`: new,
    empty or an earlier release): ``network.bif``, ``cpds.csv`` and the manifest last, which
    ``dpopt check out_dir`` verifies; the directory."""
    instance("learned", learned, Learned)
    out = release_dir.begin(out_dir)
    text = learned.network.bif_text().encode("utf-8")
    (out / BIF).write_bytes(text)
    files = {
        BIF: hashlib.sha256(text).hexdigest(),
        CPDS: release_dir.write_table(out, CPDS, cpd_table(learned.network)),
    }
    first = len(learned.network.nodes) if learned.objective == "paper" else 0
    sensitivities = [None] * first + [1.0] * (len(learned.measured) - first)
    release_dir.finish(
        out,
        family="dgm",
        result=learned,
        sensitivities=sensitivities,
        files=files,
        public=_public(learned),
    )
    return out


def _public_network(public: Any) -> Network:
    """The structure the manifest records (a ValueError when it is malformed)."""
    nodes = public["structure"]
    return Network.from_parents(
        {row["node"]: list(row["parents"]) for row in nodes},
        {row["node"]: list(row["states"]) for row in nodes},
        name=str(public["network"]),
    )


def _table_cpds(frame: Any, network: Network) -> tuple[list[np.ndarray] | None, list[str]]:
    """The CPDs in ``cpds.csv`` shaped as ``network``'s, or None and why they are not: a
    missing column, an entry the structure does not have, or one it has that is missing."""
    import pandas as pd

    if list(frame.columns) != [*KEYS, "probability"]:
        return None, [f"{CPDS}: columns {list(frame.columns)}, not {[*KEYS, 'probability']}"]
    expected = pd.MultiIndex.from_tuples(_keys(network), names=KEYS)
    found = frame.set_index(KEYS)["probability"]
    errors = [
        f"{CPDS}: ({', '.join(k)}) appears twice" for k in found.index[found.index.duplicated()]
    ]
    extra = found.index.difference(expected)
    errors += [f"{CPDS}: ({', '.join(k)}) is not in the public structure" for k in extra[:5]]
    missing = expected.difference(found.index)
    errors += [f"{CPDS}: no row for ({', '.join(k)})" for k in missing[:5]]
    if errors:
        return None, errors
    values = pd.to_numeric(found.reindex(expected), errors="coerce").to_numpy(dtype=float)
    cuts = np.cumsum(
        [0] + [int(np.prod(network.table_shape(i))) for i in range(len(network.nodes))]
    )
    return [
        values[cuts[i] : cuts[i + 1]].reshape(network.table_shape(i))
        for i in range(len(network.nodes))
    ], []


def _bif_errors(path: Path, network: Network, cpds: list[np.ndarray] | None) -> list[str]:
    """``network.bif``: readable, of the public structure, its CPDs those of ``cpds.csv``."""
    try:
        saved = Network.from_bif(path)
    except (OSError, ValueError) as err:
        return [f"{BIF} cannot be read: {err}"]
    if _structure(saved) != _structure(network):
        return [f"{BIF}: its structure (nodes, parents, states) is not the public one"]
    if saved.cpds is None:
        return [f"{BIF} has no CPDs (a structure-only BIF), not the learned network"]
    if cpds is None:
        return []
    return [
        f"{BIF} and {CPDS} differ on the CPD of {node!r}"
        for node, ours, theirs in zip(network.nodes, cpds, saved.cpds, strict=True)
        if not np.allclose(ours, theirs, rtol=0, atol=1e-12)
    ]


def check_release(stored: release_dir.StoredRelease, *, progress: Progress) -> list[str]:
    """What a saved DGM release breaks beside the common contract: ``cpds.csv`` holds a row
    for every entry of the public structure and each row is a distribution, ``network.bif``
    has that structure and the same CPDs, and the measured tables (one per node with ε_i > 0,
    after the n Stage-I tables of the paper objective) are covered by the budget at
    sensitivity 1, Stage I's amplified at the recorded sampling rate; ``progress``: one stage."""
    import pandas as pd

    instance("stored", stored, release_dir.StoredRelease)
    public = stored.public
    network = _public_network(public)
    with instance("progress", progress, Progress).stage("cpds"):
        path = regular_file(CPDS, stored.path / CPDS)
        frame = pd.read_csv(path, dtype={k: str for k in KEYS}, keep_default_na=False)
        cpds, errors = _table_cpds(frame, network)
        if cpds is not None:
            errors += cpd_errors(network.nodes, cpds)
        errors += _bif_errors(stored.path / BIF, network, cpds)
    stage_one = public["stage_one"]
    first = len(network.nodes) if stage_one else 0
    rate = float(Fraction(stage_one["sampling_rate"])) if stage_one else 1.0
    shares = [Fraction(share) for share in dict(public["allocation"]).values()]
    tables = first + sum(1 for share in shares if share > 0)
    # without Stage I the common check composes the same losses: its budget check suffices
    budget = stored.budget if first else None
    return errors + table_noise_errors(budget, stored.measured, first, tables, rate)
