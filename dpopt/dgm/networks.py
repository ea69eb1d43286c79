"""Discrete Bayesian networks: the public structure and domains, CPDs, records and counts.

Roy Chowdhury et al., Sec. 3.1: a DAG over discrete attributes X_1..X_n, each with a public domain
(every state, also those the data never shows), CPDs Θ[x_i | x_pa_i], and per node the contingency
table T_i over S_i = Pa_i ∪ {X_i}. Here a node's CPD and its table are arrays of shape
``(*cards[parents[i]], cards[i])``: parents first, in the node's evidence order, then the node.

The structure and domains are public; data (records, counts) are private and enter only
through :meth:`Network.encode` and :meth:`Network.count_tables`.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from dpopt.dgm import bif
from dpopt.errors import InvalidInput, InvalidType
from dpopt.extras import require
from dpopt.paths import path_kind, regular_file
from dpopt.validation import finite_array, instance, integer

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Network", "load", "min_fill_width", "quiet_pgmpy"]

ROW_SUM_TOL = 1e-3
"""How far a CPD row may sum from 1 before it is rejected (bnlearn rows are rounded, e.g. 0.999);
rows within it are renormalized."""


@contextmanager
def quiet_pgmpy() -> Iterator[None]:
    """Import pgmpy without its own deprecation notices (pgmpy 1.1 warns, FutureWarning, about
    its modules while importing them), or an ImportError naming the extra that installs it."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=FutureWarning, module="pgmpy")
        require("pgmpy", "a pgmpy model")
        yield


def min_fill_width(graph: Mapping[int, Iterable[int]]) -> int:
    """The width (largest neighbourhood at elimination) of the order that always eliminates a
    vertex adding the fewest fill-in edges, ties to the smallest vertex, of the undirected
    graph ``{vertex: neighbours}``. Every elimination order's width bounds the treewidth from
    above."""
    instance("graph", graph, Mapping)
    adjacency: dict[int, set[int]] = {integer("vertex", v): set() for v in graph}
    for v, near in graph.items():
        if not isinstance(near, set | frozenset | list | tuple):
            raise InvalidType(f"graph[{v}] must be a set or list of vertices, got {near!r:.60}")
        for a in near:
            if a not in adjacency:
                raise InvalidInput(f"graph[{v}] names {a!r}, which is not a vertex of the graph")
            if a != v:
                adjacency[v].add(a)
                adjacency[a].add(v)
    width = 0
    while adjacency:
        chosen = min(adjacency, key=lambda v: (_fill_in(adjacency, v), v))
        near = adjacency.pop(chosen)
        width = max(width, len(near))
        for a in near:
            adjacency[a].discard(chosen)
            adjacency[a].update(b for b in near if b != a)
    return width


def _fill_in(adjacency: dict[int, set[int]], v: int) -> int:
    """The edges eliminating ``v`` would add: pairs of its neighbours not yet adjacent."""
    near = sorted(adjacency[v])
    return sum(b not in adjacency[a] for k, a in enumerate(near) for b in near[k + 1 :])


def _topological(names: Sequence[str], parents: Mapping[str, Sequence[str]]) -> list[str]:
    """Kahn's order, ties in the given order; a cycle is reported with its nodes."""
    pending = {v: set(parents.get(v, ())) for v in names}
    order: list[str] = []
    while pending:
        ready = [v for v in names if v in pending and not pending[v]]
        if not ready:
            raise InvalidInput(f"the graph is cyclic: {_cycle(pending)}")
        for v in ready:
            del pending[v]
            order.append(v)
        for waiting in pending.values():
            waiting.difference_update(ready)
    return order


def _listed(name: str, value: Any) -> Sequence[Any]:
    """A field of :class:`Network`: a tuple or list (one entry per node, parent or state)."""
    if not isinstance(value, tuple | list):
        raise InvalidType(f"{name} must be a tuple, got {type(value).__name__}")
    return value


def _distinct(name: str, values: Sequence[Any]) -> set[Any]:
    """The set of ``values`` (names or labels: hashable)."""
    try:
        return set(values)
    except TypeError:
        raise InvalidType(f"{name} must hold hashable names, got {values!r:.60}") from None


def _table(i: int, cpd: Any) -> np.ndarray:
    """A CPD checked for :class:`Network`: probabilities (finite, >= 0)."""
    table = finite_array(f"cpds[{i}]", cpd)
    if table.min() < 0:
        raise InvalidInput(f"cpds[{i}] must be >= 0 (probabilities), got {table.min()}")
    return table


def _first_row(flagged: np.ndarray) -> int:
    """The first flagged record's row, counted from 1 as a data file's rows (header not
    counted)."""
    return int(np.flatnonzero(flagged)[0]) + 1


def _cycle(pending: dict[str, set[str]]) -> str:
    """One directed cycle among the nodes left by Kahn's algorithm, as 'A → B → A'."""
    node = next(iter(pending))
    seen: list[str] = []
    while node not in seen:
        seen.append(node)
        node = min(pending[node])
    loop = [*seen[seen.index(node) :], node]
    return " → ".join(reversed(loop))


@dataclass(frozen=True, eq=False)
class Network:
    """A discrete Bayesian network, nodes in topological order.

    Build it with :meth:`from_parents`, :func:`load` (a bundled bnlearn name, a BIF file, a JSON
    structure or a pgmpy model), :meth:`from_bif`, :meth:`from_json` or :meth:`from_pgmpy`.
    ``parents[i]`` are node indices (all < i), in the order of the CPD's axes; ``cpds`` is
    ``None`` for a structure without parameters (a structure-only BIF, a JSON structure): what
    needs the CPDs (sampling, inference, a pgmpy model) refuses it (:meth:`require_cpds`), what
    needs the structure alone (:func:`~dpopt.dgm.learn`, ``plan_error_curve`` with the
    Dirichlet prior) takes it.
    """

    nodes: tuple[str, ...]
    parents: tuple[tuple[int, ...], ...]
    states: tuple[tuple[str, ...], ...]
    cpds: tuple[np.ndarray, ...] | None = None
    name: str = ""

    def __post_init__(self) -> None:
        n = len(_listed("nodes", self.nodes))
        if (
            n == 0
            or not len(_listed("parents", self.parents)) == len(_listed("states", self.states)) == n
        ):
            raise InvalidInput("nodes, parents and states must have one entry per node (≥ 1)")
        if len(_distinct("nodes", self.nodes)) != n:
            raise InvalidInput("node names must be distinct")
        for i, (node, given, labels) in enumerate(
            zip(self.nodes, self.parents, self.states, strict=True)
        ):
            _listed(f"parents[{i}]", given)
            _distinct(f"states[{i}]", _listed(f"states[{i}]", labels))
            if any(not isinstance(p, int) or not 0 <= p < i for p in given) or len(
                set(given)
            ) != len(given):
                raise InvalidInput(
                    f"node {node!r}: parents {given} must be distinct indices of earlier nodes "
                    "(nodes in topological order; a cycle cannot be ordered)"
                )
            if not labels or len(set(labels)) != len(labels):
                raise InvalidInput(f"node {node!r}: states must be non-empty and distinct")
        if self.cpds is not None and (
            len(_listed("cpds", self.cpds)) != n
            or any(_table(i, c).shape != self.table_shape(i) for i, c in enumerate(self.cpds))
        ):
            raise InvalidInput("cpds must hold one table of shape table_shape(i) per node")

    @classmethod
    def from_parents(
        cls,
        parents: Mapping[str, Sequence[str]],
        states: Mapping[str, Sequence[Any]],
        cpds: Mapping[str, Any] | None = None,
        *,
        name: str = "",
    ) -> Network:
        """A network from each node's parents and states (and CPDs, shaped as above).

        Raises ``ValueError`` for a cyclic graph, an unknown parent, a node without states or
        with repeated states, or a CPD of the wrong shape, with negative entries or with rows
        not summing to 1 (within :data:`ROW_SUM_TOL`; such rows are renormalized).
        """
        names = list(states)
        if not names:
            raise InvalidInput("a network needs at least one node")
        for node, given in parents.items():
            unknown = [p for p in (node, *given) if p not in states]
            if unknown:
                raise InvalidInput(f"node {node!r}: {unknown} have no states (unknown nodes)")
            if node in given or len(set(given)) != len(given):
                raise InvalidInput(f"node {node!r}: parents {list(given)} repeat or include itself")
        for node, listed in states.items():
            labels = tuple(str(s) for s in listed)
            if not labels or len(set(labels)) != len(labels):
                raise InvalidInput(
                    f"node {node!r}: states must be non-empty and distinct: {labels}"
                )
        order = _topological(names, parents)
        index = {v: i for i, v in enumerate(order)}
        network = cls(
            tuple(order),
            tuple(tuple(index[p] for p in parents.get(v, ())) for v in order),
            tuple(tuple(str(s) for s in states[v]) for v in order),
            None,
            name,
        )
        if cpds is None:
            return network
        missing = [v for v in order if v not in cpds]
        if missing:
            raise InvalidInput(f"no CPD for nodes {missing}")
        return network.with_cpds([cpds[v] for v in order])

    @classmethod
    def from_bif(cls, source: str | Path, *, name: str = "") -> Network:
        """A network from a ``.bif``/``.bif.gz`` file (see :mod:`dpopt.dgm.bif`); without CPDs
        from a structure-only BIF. A ValueError names the file."""
        try:
            states, parents, cpds = bif.parse(bif.read_text(source))
            return cls.from_parents(parents, states, cpds, name=name or Path(source).name)
        except ValueError as error:
            raise InvalidInput(f"{source}: {error}") from None

    @classmethod
    def from_json(cls, source: str | Path, *, name: str = "") -> Network:
        """A structure without CPDs from a JSON file ``{"states": {node: [state, ...]},
        "parents": {node: [parent, ...]}}``, every node in both (a root's parents ``[]``),
        states strings or integers. A ValueError names the file and what is wrong."""
        import json

        path = Path(source)
        try:
            spec = json.loads(path.read_text(encoding="utf-8"))
        except ValueError as error:
            raise InvalidInput(f"{path}: not a JSON file ({error})") from None
        shape = '{"states": {node: [state, ...]}, "parents": {node: [parent, ...]}}'
        if not isinstance(spec, dict) or set(spec) != {"states", "parents"}:
            raise InvalidInput(f"{path}: a network structure in JSON is {shape}")
        for field, kinds in (("states", (str, int)), ("parents", (str,))):
            table = spec[field]
            if not isinstance(table, dict) or not all(
                isinstance(items, list)
                and all(isinstance(x, kinds) and not isinstance(x, bool) for x in items)
                for items in table.values()
            ):
                raise InvalidInput(f"{path}: {field} must map each node to a list, as in {shape}")
        missing = [v for v in spec["states"] if v not in spec["parents"]]
        unknown = [v for v in spec["parents"] if v not in spec["states"]]
        if missing or unknown:
            raise InvalidInput(
                f"{path}: parents must list every node of states, a root with []: missing "
                f"{missing}, not in states {unknown}"
            )
        try:
            return cls.from_parents(spec["parents"], spec["states"], name=name or path.name)
        except ValueError as error:
            raise InvalidInput(f"{path}: {error}") from None

    @classmethod
    def from_pgmpy(cls, model: Any) -> Network:
        """A network from a pgmpy ``DiscreteBayesianNetwork`` (its CPDs, if it has them)."""
        cpds = {cpd.variable: cpd for cpd in model.get_cpds()}
        states: dict[str, Sequence[Any]] = {}
        parents: dict[str, Sequence[str]] = {}
        tables: dict[str, np.ndarray] = {}
        for node in model.nodes():
            if node in cpds:
                cpd = cpds[node]
                evidence = list(cpd.variables[1:])
                states[node] = cpd.state_names[node]
                values = np.asarray(cpd.get_values(), dtype=np.float64)
                tables[node] = values.T.reshape(*cpd.cardinality[1:], cpd.cardinality[0])
                parents[node] = evidence
            else:
                parents[node] = list(model.get_parents(node))
        if tables and len(tables) != len(parents):
            raise InvalidInput("the pgmpy model has CPDs for some nodes only")
        if not tables:
            raise InvalidInput("the pgmpy model has no CPDs: its states are unknown")
        return cls.from_parents(parents, states, tables, name=str(getattr(model, "name", "")))

    def with_cpds(self, cpds: Sequence[Any]) -> Network:
        """This structure with the given CPDs (validated, rows renormalized)."""
        if len(cpds) != len(self.nodes):
            raise InvalidInput(f"need {len(self.nodes)} CPDs, got {len(cpds)}")
        checked = []
        for i, cpd in enumerate(cpds):
            table = np.array(cpd, dtype=np.float64)
            if table.shape != self.table_shape(i):
                raise InvalidInput(
                    f"CPD of {self.nodes[i]!r} has shape {table.shape}, "
                    f"expected {self.table_shape(i)} (parents' states, then the node's)"
                )
            sums = table.sum(axis=-1)
            if not np.all(np.isfinite(table)) or np.any(table < 0):
                raise InvalidInput(f"CPD of {self.nodes[i]!r} has negative or non-finite entries")
            if np.any(np.abs(sums - 1) > ROW_SUM_TOL):
                raise InvalidInput(f"CPD of {self.nodes[i]!r} has rows not summing to 1")
            table /= sums[..., None]
            table.setflags(write=False)
            checked.append(table)
        return Network(self.nodes, self.parents, self.states, tuple(checked), self.name)

    # --- structure (public) ---------------------------------------------------------------

    @cached_property
    def cards(self) -> np.ndarray:
        """|dom(X_i)| per node."""
        return np.array([len(s) for s in self.states], dtype=np.int64)

    def table_shape(self, i: int) -> tuple[int, ...]:
        """Shape of node i's CPD and count table: (*cards of its parents, card of i)."""
        return (*(int(self.cards[p]) for p in self.parents[i]), int(self.cards[i]))

    @cached_property
    def children(self) -> tuple[tuple[int, ...], ...]:
        kids: list[list[int]] = [[] for _ in self.nodes]
        for i, given in enumerate(self.parents):
            for p in given:
                kids[p].append(i)
        return tuple(tuple(k) for k in kids)

    @cached_property
    def heights(self) -> np.ndarray:
        """h_i: edges on the longest directed path from X_i to a sink
        (docs/families/dgm.md#dgm-height)."""
        height = np.zeros(len(self.nodes), dtype=np.int64)
        for i in reversed(range(len(self.nodes))):
            if self.children[i]:
                height[i] = 1 + max(height[c] for c in self.children[i])
        return height

    @cached_property
    def out_degrees(self) -> np.ndarray:
        """o_i: the number of children."""
        return np.array([len(k) for k in self.children], dtype=np.int64)

    @cached_property
    def ancestors(self) -> tuple[frozenset[int], ...]:
        """Γ(X_i): every node with a directed path to X_i."""
        found: list[frozenset[int]] = []
        for given in self.parents:
            found.append(frozenset(given).union(*(found[p] for p in given)))
        return tuple(found)

    @cached_property
    def descendants(self) -> tuple[frozenset[int], ...]:
        """Every node with a directed path from X_i (X_i itself excluded)."""
        found: list[frozenset[int]] = [frozenset()] * len(self.nodes)
        for i in reversed(range(len(self.nodes))):
            found[i] = frozenset(self.children[i]).union(*(found[c] for c in self.children[i]))
        return tuple(found)

    @cached_property
    def covers(self) -> tuple[tuple[int, ...], ...]:
        """Per node i, the nodes j ≠ i whose family S_j = Pa_j ∪ {X_j} contains S_i and lies in
        no other family (a maximal family); () when S_i is itself maximal.

        A covered S_i is a root's {X_i} inside a child's family, or a node whose children
        share all its parents: T_j's marginal on S_i is a count table of S_i too.
        """
        families = [frozenset((*given, i)) for i, given in enumerate(self.parents)]
        maximal = [
            i for i, family in enumerate(families) if not any(family < other for other in families)
        ]
        return tuple(
            () if i in maximal else tuple(j for j in maximal if family < families[j])
            for i, family in enumerate(families)
        )

    @cached_property
    def mean_sensitivity(self) -> np.ndarray:
        """Δ^N_i of Eq. 8 from the CPDs (uniform ones if the network has none), 0 for a leaf.

        By the definition (Eq. 9 as Roy Chowdhury et al., Eqs. 7–9 reads it): Σ_y
        ∂P[Y=y]/∂Θ[x_i|x_pa_i] is the sum over every assignment of Γ(Y) ∪ {Y} agreeing with (x_i,
        x_pa_i) of the product of the other CPD entries, i.e. one tensor contraction of the CPDs of
        Γ(Y) ∪ {Y} without X_i's, left open on (Pa_i, X_i); Δ_i averages it over the cells of S_i,
        over the children Y (each weighted 1/|dom Y|). Eqs. 7–9 (Roy Chowdhury et al.) make it equal
        (1/|dom Pa_i|)·mean_Y 1/|dom Y| for any CPDs; the tests use that as the oracle.
        """
        from opt_einsum import contract

        cpds = self.cpds or tuple(
            np.full(self.table_shape(i), 1.0 / self.cards[i]) for i in range(len(self.nodes))
        )
        delta = np.zeros(len(self.nodes))
        for i, kids in enumerate(self.children):
            if not kids:
                continue
            total = np.zeros(self.table_shape(i))
            for child in kids:
                family = sorted((self.ancestors[child] | {child}) - {i})
                operands: list[Any] = []
                for j in family:
                    operands += [cpds[j], [*self.parents[j], j]]
                total += contract(*operands, [*self.parents[i], i]) / self.cards[child]
            delta[i] = float(total.mean()) / len(kids)
        return delta

    @cached_property
    def parent_marginals(self) -> tuple[np.ndarray, ...]:
        """P[Pa_i] under the CPDs, one array per node over its parents' axes (in the CPD's
        order; a 0-d 1 for a root): the CPDs of Γ(X_i) contracted, left open on Pa_i."""
        from opt_einsum import contract

        cpds = self.require_cpds("parent_marginals (P[Pa_i])")
        marginals = []
        for i, given in enumerate(self.parents):
            operands: list[Any] = []
            for j in sorted(self.ancestors[i]):
                operands += [cpds[j], [*self.parents[j], j]]
            marginals.append(contract(*operands, list(given)) if given else np.ones(()))
        return tuple(marginals)

    @cached_property
    def weights(self) -> np.ndarray:
        """W[i] = (h_i+1)(o_i+1)(Δ^N_i+1), Eq. 7: ≥ 1, and 1 for every leaf."""
        return (self.heights + 1) * (self.out_degrees + 1) * (self.mean_sensitivity + 1)

    @property
    def eta(self) -> int:
        """η = max_i (in-degree + out-degree) + 1 (Sec. 4)."""
        return int(max(len(p) + o for p, o in zip(self.parents, self.out_degrees, strict=True))) + 1

    def treewidth(self) -> int:
        """κ: an upper bound on the treewidth of the moral graph, the width of the greedy
        min-fill-in elimination order (exact on the small networks;
        docs/families/dgm.md#dgm-treewidth)."""
        moral: dict[int, set[int]] = {v: set() for v in range(len(self.nodes))}
        for i, given in enumerate(self.parents):
            family = (*given, i)
            for a in family:
                moral[a].update(b for b in family if b != a)
        return min_fill_width(moral)

    @property
    def free_parameters(self) -> int:
        """Σ_i (|dom X_i| − 1)·|dom Pa_i| (the 'Parameters' column of Roy Chowdhury et al., Sec.
        5)."""
        return int(
            sum(
                (self.cards[i] - 1) * np.prod(self.table_shape(i)[:-1])
                for i in range(len(self.nodes))
            )
        )

    def require_cpds(self, needed_by: str) -> tuple[np.ndarray, ...]:
        """The CPDs, or an InvalidInput naming the network and what needs them
        (``needed_by``) when it is a structure only."""
        if self.cpds is None:
            raise InvalidInput(
                f"network {self.name!r} has no CPDs (a structure only, such as a structure-only "
                f"BIF): {needed_by} needs them; learn them from records with dgm.learn"
            )
        return self.cpds

    def bif_text(self) -> str:
        """The network as BIF text (:func:`dpopt.dgm.bif.text`), a structure-only BIF when it
        has no CPDs: :func:`load` of a file holding it gives this network back, its CPDs to
        float round-off."""
        return bif.text(
            dict(zip(self.nodes, self.states, strict=True)),
            {
                v: tuple(self.nodes[p] for p in given)
                for v, given in zip(self.nodes, self.parents, strict=True)
            },
            None if self.cpds is None else dict(zip(self.nodes, self.cpds, strict=True)),
            name=self.name,
        )

    # --- records --------------------------------------------------------------------------

    def _flat_index(self, codes: np.ndarray, columns: Sequence[int]) -> np.ndarray:
        """Row-major index of each record's values on ``columns`` (axes in that order)."""
        cells = int(np.prod([self.cards[c] for c in columns]))
        kind: type[np.signedinteger[Any]] = np.int32 if cells < 2**31 else np.int64
        flat: np.ndarray = np.zeros(codes.shape[0], dtype=kind)
        for c in columns:
            flat *= self.cards[c]
            flat += codes[:, c]
        return flat

    def sample_codes(self, records: int, rng: np.random.Generator) -> np.ndarray:
        """``records`` rows drawn from the CPDs by forward sampling: state indices, shape (m, n).

        Synthetic data for experiments, not a release: float draws are fine here.
        """
        cpds = self.require_cpds("sampling records")
        if not isinstance(rng, np.random.Generator):
            raise InvalidType(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
        codes = np.zeros((records, len(self.nodes)), dtype=np.int16, order="F")
        for i, cpd in enumerate(cpds):
            rows = cpd.reshape(-1, self.cards[i])
            config = self._flat_index(codes, self.parents[i])
            cumulative = np.cumsum(rows, axis=1)[:, :-1]
            draw = rng.random(records)
            codes[:, i] = (draw[:, None] >= cumulative[config]).sum(axis=1)
        return codes

    def sample(self, records: int, rng: np.random.Generator) -> pd.DataFrame:
        """Records drawn from the CPDs, as a DataFrame of categorical columns."""
        return self.decode(self.sample_codes(records, rng))

    def decode(self, codes: np.ndarray) -> pd.DataFrame:
        """State indices (m, n) → a DataFrame with one categorical column per node."""
        import pandas as pd

        return pd.DataFrame(
            {
                v: pd.Categorical.from_codes(codes[:, i], categories=list(self.states[i]))
                for i, v in enumerate(self.nodes)
            }
        )

    def encode(self, data: Any, *, columns: Mapping[str, str] | None = None) -> np.ndarray:
        """A DataFrame of records → state indices of shape (m, n), node order (Fortran order:
        each node's column is contiguous, which is how :meth:`count_tables` reads it).
        ``columns`` maps every node to the data's column holding it (default: the column of
        the node's name).

        Raises ``ValueError`` for missing or extra columns, missing values, values outside a
        node's states (strings are matched to the states; numbers by their text, e.g. 1 →
        '1'; the message names the column, its node when named otherwise, the first bad row
        counted from 1, and the states), or no records; ``TypeError`` if ``data`` is not a
        DataFrame.
        """
        import pandas as pd

        if not isinstance(data, pd.DataFrame):
            raise InvalidType(f"data must be a pandas DataFrame, got {type(data).__name__}")
        source = self._sources(columns)
        names = [str(c) for c in data.columns]
        missing = [source[v] for v in self.nodes if source[v] not in names]
        extra = sorted(set(names) - set(source.values()))
        if missing or extra or len(set(names)) != len(names):
            whose = "the network's nodes" if columns is None else "the columns `columns` names"
            raise InvalidInput(
                f"data columns must be {whose}: missing {missing}, extra {extra}"
                + (", repeated names" if len(set(names)) != len(names) else "")
            )
        if len(data) == 0:
            raise InvalidInput("data has no records")
        label = {str(c): c for c in data.columns}
        codes = np.empty((len(data), len(self.nodes)), dtype=np.int16, order="F")
        for i, node in enumerate(self.nodes):
            where = repr(source[node]) + ("" if source[node] == node else f" (node {node!r})")
            codes[:, i] = self._column_codes(where, data[label[source[node]]], self.states[i])
        return codes

    def _sources(self, columns: Mapping[str, str] | None) -> dict[str, str]:
        """{node: the data's column holding it}: ``columns`` checked (every node once, each
        column a distinct str), or every node's own name."""
        if columns is None:
            return {v: v for v in self.nodes}
        instance("columns", columns, Mapping)
        unknown = [v for v in columns if v not in self.nodes]
        missing = [v for v in self.nodes if v not in columns]
        if unknown or missing:
            raise InvalidInput(
                f"columns must map every node of the network to a column: unknown nodes "
                f"{unknown}, nodes without a column {missing}"
            )
        for node, column in columns.items():
            instance(f"columns[{node!r}]", column, str)
        if len(set(columns.values())) != len(columns):
            raise InvalidInput(f"columns names a column for two nodes: {dict(columns)}")
        return {v: columns[v] for v in self.nodes}

    @staticmethod
    def _column_codes(where: str, column: pd.Series, states: tuple[str, ...]) -> np.ndarray:
        """The state indices of one column; ``where`` names it in an error."""
        import pandas as pd

        index = pd.Index(states)
        if isinstance(column.dtype, pd.CategoricalDtype):
            lookup = np.append(index.get_indexer(column.cat.categories.astype(str)), -1).astype(
                np.int16
            )
            codes = lookup[column.cat.codes.to_numpy()]  # code −1 (missing) → lookup[−1] = −1
        else:
            codes = index.get_indexer(column)
        if (codes < 0).any():
            absent = column.isna().to_numpy()
            if absent.any():
                raise InvalidInput(
                    f"column {where}, row {_first_row(absent)}: a missing value "
                    f"({int(absent.sum())} missing in all)"
                )
            if not isinstance(column.dtype, pd.CategoricalDtype):
                codes = index.get_indexer(column.astype(str))  # numbers matched by their text
        outside = np.asarray(codes < 0)
        if outside.any():
            row = _first_row(outside)
            raise InvalidInput(
                f"column {where}, row {row}: {str(column.iloc[row - 1])!r} is not one of its "
                f"states {list(states)} ({int(outside.sum())} outside them in all)"
            )
        return np.asarray(codes, dtype=np.int16)

    def count_tables(
        self, codes: np.ndarray, nodes: Sequence[int] | None = None
    ) -> list[np.ndarray]:
        """T_i for every node (or for ``nodes``, in that order): the counts of (parents, node)
        over all cells, zeros included."""
        return [
            np.bincount(
                self._flat_index(codes, (*self.parents[i], i)),
                minlength=int(np.prod(self.table_shape(i))),
            ).reshape(self.table_shape(i))
            for i in (range(len(self.nodes)) if nodes is None else nodes)
        ]

    # --- pgmpy ----------------------------------------------------------------------------

    def pgmpy_graph(self) -> Any:
        """The structure as a pgmpy ``DiscreteBayesianNetwork`` without CPDs."""
        with quiet_pgmpy():
            from pgmpy.models import DiscreteBayesianNetwork

        model = DiscreteBayesianNetwork()
        model.add_nodes_from(self.nodes)
        model.add_edges_from(
            (self.nodes[p], v)
            for v, given in zip(self.nodes, self.parents, strict=True)
            for p in given
        )
        return model

    def to_pgmpy(self) -> Any:
        """A pgmpy ``DiscreteBayesianNetwork`` with these CPDs and state names."""
        cpds = self.require_cpds("a pgmpy model with CPDs (to_pgmpy)")
        with quiet_pgmpy():
            from pgmpy.factors.discrete import TabularCPD

        model = self.pgmpy_graph()
        for i, node in enumerate(self.nodes):
            evidence = [self.nodes[p] for p in self.parents[i]]
            model.add_cpds(
                TabularCPD(
                    node,
                    int(self.cards[i]),
                    cpds[i].reshape(-1, self.cards[i]).T,
                    evidence=evidence or None,
                    evidence_card=[int(self.cards[p]) for p in self.parents[i]] or None,
                    state_names={
                        v: list(self.states[self.nodes.index(v)]) for v in (node, *evidence)
                    },
                )
            )
        if self.name:
            model.name = self.name
        return model


def load(source: Any) -> Network:
    """A network from a bundled bnlearn name (:data:`dpopt.dgm.BUNDLED`), a BIF file path (with
    CPDs, or structure-only: :mod:`dpopt.dgm.bif`), a ``.json`` structure file
    (:meth:`Network.from_json`), a pgmpy ``DiscreteBayesianNetwork`` or a :class:`Network`
    (returned as is)."""
    if isinstance(source, Network):
        return source
    if isinstance(source, str | Path):
        if isinstance(source, str) and source in bif.BUNDLED:
            states, parents, cpds = bif.parse(bif.bundled_text(source))
            return Network.from_parents(parents, states, cpds, name=source)
        if Path(source).is_file():
            if Path(source).suffix.lower() == ".json":
                return Network.from_json(source)
            return Network.from_bif(source)
        if path_kind(source) != "missing":  # a FIFO or a device: never opened (it would wait)
            regular_file("network", source)
        raise InvalidInput(
            f"{source!r} is neither a bundled network ({', '.join(bif.BUNDLED)}) nor a file (BIF, "
            "or a .json structure)"
        )
    if hasattr(source, "get_cpds") and hasattr(source, "nodes"):
        return Network.from_pgmpy(source)
    raise InvalidType(
        "network must be a bundled name, a BIF path, a pgmpy DiscreteBayesianNetwork or a "
        f"dpopt.dgm.Network, got {type(source).__name__}"
    )
