"""A relational release on disk (docs/design.md, "Releases on disk"): :func:`write` saves a
:class:`~dpopt.relational.SyntheticDatabase` as ``left.csv``, ``right.csv``, ``links.csv`` and
the manifest, and :func:`check` (``release_dir.FAMILY_CHECKS["relational"]``) is what
``dpopt check`` adds for it (docs/families/relational.md#your-own-data).

What ``dpopt check`` certifies for a relational release: the budget report is sound and no
smaller than the composition of what each record's noise scale implies at the sensitivity
the family derives from the public facts (:func:`sensitivities`: √2·d_max for a link
workload's counts, √2 for an MST marginal, an exponential mechanism's ε as stated), every
status is feasible, the tables are the ones released (checksums), their columns and values
are the public schema and domains, their ids the row numbers 0 … n − 1 with n the public
row count, and the links m unique pairs of existing ids. What it cannot certify: that the
noise was drawn at the stated scales, that the stated records are everything that read the
private data, or that the real links respected d_max (the data owner's pruning). The
synthetic links themselves are not bounded by d_max: the fit does not cap their degrees.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from dpopt.errors import InvalidInput
from dpopt.paths import regular_file
from dpopt.privacy import approx_dp_to_zcdp
from dpopt.progress import Progress
from dpopt.relational.budget import SQRT2_UP
from dpopt.relational.contract import link_errors
from dpopt.relational.data import SIDES, RelationalData
from dpopt.relational.synthesizer import SyntheticDatabase
from dpopt.release import NOISE_RTOL, Measured
from dpopt.release_dir import StoredRelease
from dpopt.validation import instance, integer, sequence

__all__ = ["FILES", "check", "public_facts", "sensitivities", "write"]

FILES = {"left": "left.csv", "right": "right.csv", "links": "links.csv"}
"""The released tables: the synthetic left and right tables (``id`` and the attributes) and
the links (``left_id``, ``right_id``)."""


def sensitivities(measured: Sequence[Measured], d_max: int, m: int) -> list[float]:
    """The public sensitivity each record's noise was calibrated to: a link workload's counts
    √2·d_max and its selection's score d_max/m (dpopt.relational.links), an MST marginal √2
    and its tree selection's score 2 (dpopt.relational.tables, neighbours that change one
    row); rational bounds of √2 rounded up, as the release used them."""
    records = sequence("measured", measured, "Measured records", of=Measured)
    d_max, m = integer("d_max", d_max, minimum=1), integer("m", m, minimum=1)
    public = {
        (True, True): float(SQRT2_UP * d_max),
        (True, False): d_max / m,
        (False, True): float(SQRT2_UP),
        (False, False): 2.0,
    }
    return [
        public[record.label.startswith("links"), record.noise == "discrete-gaussian"]
        for record in records
    ]


def public_facts(data: RelationalData, release: Any) -> dict[str, Any]:
    """The public facts a check of the release needs: the schema and domains, d_max, m, the
    released sizes and the guarantee (docs/families/relational.md#relational-public)."""
    instance("data", data, RelationalData)
    instance("release", release, SyntheticDatabase)
    return {
        "d_max": data.d_max,
        "m": data.m,
        "relationship": data.relationship,
        "epsilon": release.epsilon,
        "delta": release.delta,
        "rows": {"left": len(release.left), "right": len(release.right)},
        "links": len(release.links),
        "link_rounds": release.link_result.schedule.to_dict(),
        "columns": {side: data.columns(side) for side in SIDES},
        "domains": {
            side: [[_plain(v) for v in domain] for domain in data.domains(side)] for side in SIDES
        },
    }


def _plain(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


def write(out_dir: Any, data: RelationalData, release: Any) -> Path:
    """The release's tables and manifest in the new or empty directory ``out_dir``
    (:func:`dpopt.release_dir.begin`); the manifest's path."""
    from dpopt import release_dir

    out = release_dir.begin(out_dir)
    public = public_facts(data, release)
    frames = {"left": release.left, "right": release.right, "links": release.links}
    files = {name: release_dir.write_table(out, name, frames[t]) for t, name in FILES.items()}
    return release_dir.finish(
        out,
        family="relational",
        result=release,
        sensitivities=sensitivities(release.measured, data.d_max, data.m),
        files=files,
        public=public,
    )


def check(stored: Any, *, progress: Progress) -> list[str]:
    """What a stored relational release's tables break (module docstring): the schema, the
    domains, the ids, the links, and the recorded sensitivities against the public ones;
    ``progress``: one stage."""
    with instance("progress", progress, Progress).stage("tables"):
        return _table_check(stored)


def _table_check(stored: Any) -> list[str]:
    public = instance("stored", stored, StoredRelease).public
    errors = _sensitivity_errors(stored) + _guarantee_errors(stored) + _rounds_errors(stored)
    rows = {}
    for side in SIDES:
        frame = _as_written(stored, FILES[side])
        rows[side] = len(frame)
        errors += _table_errors(side, frame, public)
    links = stored.table(FILES["links"])
    if list(links.columns) != ["left_id", "right_id"]:
        return [*errors, f"links.csv has columns {list(links.columns)}, not left_id, right_id"]
    if len(links) != public["links"]:
        errors.append(f"links.csv has {len(links)} links, the manifest says {public['links']}")
    pairs = links.to_numpy()
    return errors + [f"links.csv: {e}" for e in link_errors(pairs, rows["left"], rows["right"])]


def _as_written(stored: Any, name: str) -> Any:
    """A released table with every value as written (the domains are compared as text)."""
    import pandas as pd

    if name not in stored.files:
        raise InvalidInput(f"the release has no table {name}")
    frame = pd.read_csv(regular_file(name, stored.path / name), dtype=str, keep_default_na=False)
    return frame.assign(id=pd.to_numeric(frame["id"], errors="coerce")) if "id" in frame else frame


def _sensitivity_errors(stored: Any) -> list[str]:
    derived = sensitivities(stored.measured, int(stored.public["d_max"]), int(stored.public["m"]))
    return [
        f"measured {record.label!r}: recorded sensitivity {given} is below the public {want:.6g}"
        for record, given, want in zip(stored.measured, stored.sensitivities, derived, strict=True)
        if given is None or given < want
    ]


def _guarantee_errors(stored: Any) -> list[str]:
    """The measured records' composed ρ against ρ(ε, δ) of the guarantee the manifest states
    (Theorem 1's closed form, :func:`dpopt.privacy.approx_dp_to_zcdp`, as the release
    converted it; float round-off allowed, ``NOISE_RTOL``)."""
    epsilon, delta = float(stored.public["epsilon"]), float(stored.public["delta"])
    try:
        allowed = approx_dp_to_zcdp(epsilon, delta)
    except ValueError as err:
        return [f"the stated guarantee (ε, δ) = ({epsilon:g}, {delta:g}) has no ρ: {err}"]
    rhos = [record.loss.rho for record in stored.measured]
    drawn = sum((rho for rho in rhos if rho is not None), Fraction(0))
    if drawn > Fraction(allowed) * (1 + Fraction(NOISE_RTOL)):
        return [
            f"the measured records compose to ρ = {float(drawn):.6g}, above ρ(ε, δ) = "
            f"{allowed:.6g} of the stated guarantee (ε, δ) = ({epsilon:g}, {delta:g})"
        ]
    return []


def _rounds_errors(stored: Any) -> list[str]:
    """The link records against the stated link rounds: a selection and a measurement for
    each of the rounds × per_round workloads (a manifest without ``link_rounds``, written
    before it was recorded, is not checked)."""
    rounds = stored.public.get("link_rounds")
    if rounds is None:
        return []
    picks = int(rounds["rounds"]) * int(rounds["per_round"])
    found = sum(record.label.startswith("links round ") for record in stored.measured)
    if found != 2 * picks:
        return [
            f"measured holds {found} link records, not the {2 * picks} of the stated "
            f"{rounds['rounds']} rounds × {rounds['per_round']} workloads (a selection and a "
            "measurement each)"
        ]
    return []


def _table_errors(side: str, frame: Any, public: Any) -> list[str]:
    """One synthetic table against the public schema, domains and row count."""
    name, columns = FILES[side], ["id", *public["columns"][side]]
    if list(frame.columns) != columns:
        return [f"{name} has columns {list(frame.columns)}, the public schema is {columns}"]
    errors = []
    if len(frame) != public["rows"][side]:
        errors.append(f"{name} has {len(frame)} rows, the manifest says {public['rows'][side]}")
    if not np.array_equal(frame["id"].to_numpy(), np.arange(len(frame))):
        errors.append(f"{name}: the ids are not the row numbers 0 … {len(frame) - 1}")
    for column, domain in zip(public["columns"][side], public["domains"][side], strict=True):
        allowed = {str(v) for v in domain}
        outside = ~frame[column].isin(allowed)
        if outside.any():
            row = int(np.flatnonzero(outside.to_numpy())[0])
            errors.append(
                f"{name} column {column!r}, row {row + 1}: value {frame[column].iloc[row]!r} "
                "is outside its public domain"
            )
    return errors
