"""One name, one meaning (docs/design.md, "Vocabulary"): every keyword parameter of the release
entry points and planners and every flag of every ``dpopt`` command is in the glossary table,
each name in one row, and the names that could mean two things (a public seed and the secret
noise key, ``method``) mean one."""

from __future__ import annotations

import argparse
import inspect
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from dpopt import census, dgm, eigen, hdmm, relational
from dpopt.cli import build_parser as _parser
from dpopt.relational import tables

DESIGN = Path(__file__).resolve().parents[2] / "docs" / "design.md"

ENTRY_POINTS: dict[str, Callable[..., Any]] = {
    "census.release": census.release,
    "census.release_blocks": census.release_blocks,
    "census.plan_epsilon": census.plan_epsilon,
    "hdmm.measure": hdmm.measure,
    "hdmm.answer": hdmm.answer,
    "hdmm.plan_error": hdmm.plan_error,
    "hdmm.plan_epsilon": hdmm.plan_epsilon,
    "eigen.plan_error": eigen.plan_error,
    "eigen.plan_epsilon": eigen.plan_epsilon,
    "dgm.learn": dgm.learn,
    "dgm.plan_error_curve": dgm.plan_error_curve,
    "relational.synthesize": relational.synthesize,
    "relational.learn_links": relational.learn_links,
    "relational.plan_error_curve": relational.plan_error_curve,
    "relational.tables.synthesize": tables.synthesize,
}
RELEASES = [name for name in ENTRY_POINTS if ".plan_" not in name]


def glossary() -> dict[str, str]:
    """Each name of the "Vocabulary" table → its meaning (a row may list several names)."""
    text = DESIGN.read_text(encoding="utf-8").split("\n## Vocabulary\n", 1)[1]
    section = text.split("\n## ", 1)[0]
    found: dict[str, str] = {}
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if not line.startswith("| `") or len(cells) != 3:
            continue
        for name in re.findall(r"`([^`]+)`", cells[0]):
            assert name not in found, f"{name} has two rows in the glossary"
            found[name] = cells[1]
    return found


def keyword_parameters(function: Callable[..., Any]) -> list[str]:
    """Its keyword-only parameters and those with a default (the inputs it reads by position,
    ``data``, ``workload``, …, are nouns, not options)."""
    return [
        p.name
        for p in inspect.signature(function).parameters.values()
        if p.kind is p.KEYWORD_ONLY
        or (p.kind is p.POSITIONAL_OR_KEYWORD and p.default is not p.empty)
    ]


def cli_actions(
    parser: argparse.ArgumentParser, path: str = "dpopt"
) -> Iterator[tuple[str, argparse.Action]]:
    """(command, action) for every optional argument of every ``dpopt`` subcommand."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from cli_actions(sub, f"{path} {name}")
        elif action.option_strings:
            yield path, action


def test_the_glossary_lists_each_name_once_with_a_meaning() -> None:
    names = glossary()
    assert {"epsilon", "rng", "seed", "--noise-key", "method", "settings", "max_memory"} <= set(
        names
    )
    for name, meaning in names.items():
        assert meaning, f"{name} has no meaning in the glossary"
        if meaning.lower().startswith("deprecated"):
            replacement = re.search(r"`([^`]+)`", meaning)
            assert replacement and replacement.group(1) in names, (
                f"deprecated {name} names no replacement in the glossary"
            )


@pytest.mark.parametrize("entry", sorted(ENTRY_POINTS))
def test_every_keyword_parameter_is_in_the_glossary(entry: str) -> None:
    names = glossary()
    missing = [p for p in keyword_parameters(ENTRY_POINTS[entry]) if p not in names]
    assert not missing, f"{entry}: {missing} not in docs/design.md's Vocabulary"


def test_every_cli_flag_is_in_the_glossary() -> None:
    """Each flag of each subcommand. The CLI's renames of this table (``--noise-key`` for the
    secret, ``--max-memory`` on ``dpopt census release``) land with the ``dpopt.cli``
    package; until then the former flags are in the table as deprecated."""
    names = glossary()
    missing = sorted(
        {
            f"{command} {flag}"
            for command, action in cli_actions(_parser())
            for flag in action.option_strings
            if flag.startswith("--") and flag not in names
        }
    )
    assert not missing, f"flags not in docs/design.md's Vocabulary: {missing}"


def test_a_seed_is_public_and_the_noise_key_is_rng() -> None:
    """``seed`` (and every ``*_seed``) is public; the noise's secret is ``rng`` in every
    release and ``--noise-key`` on the command line, never a seed."""
    names = glossary()
    for name, meaning in names.items():
        if re.fullmatch(r"-*([a-z]+[_-])?seeds?", name) and name != "--seed":
            assert "secret" not in meaning.lower(), f"{name} is a seed: public"
    assert "secret" in names["rng"].lower() and "secret" in names["--noise-key"].lower()
    assert "alias of `--noise-key`" in names["--seed"] and "deprecated" in names["--seed"]
    for entry in RELEASES:
        parameters = inspect.signature(ENTRY_POINTS[entry]).parameters
        assert "rng" in parameters, f"{entry} has no rng"
        assert parameters.get("seed") is None or parameters["seed"].default is not None, (
            f"{entry}: a seed defaults to a public value, never to fresh (secret) entropy"
        )


def test_no_cli_seed_is_the_noise_key_but_as_an_alias() -> None:
    """A flag whose help calls it a secret is ``--noise-key`` (``--seed`` only beside it, as
    its deprecated alias)."""
    actions = list(cli_actions(_parser()))
    if not any("--noise-key" in action.option_strings for _, action in actions):
        pytest.skip("the CLI's --noise-key lands with the dpopt.cli package")
    for command, action in actions:
        if "secret" in (action.help or "").lower():
            assert "--noise-key" in action.option_strings, f"{command} {action.option_strings}"


def test_method_names_a_solver_or_algorithm() -> None:
    """``method`` is never a mechanism or a fit-strategy key of its own: the glossary gives it
    one meaning, the settings objects keep their own names, and no entry point's ``method``
    defaults to a census mechanism (``mechanism=``) or a relational link fit (``fit=``): where
    it remains beside them it is their deprecated alias, None unless given."""
    meaning = glossary()["method"]
    assert meaning.startswith("which solver or algorithm computes")
    for kind in (dgm.Settings, relational.LinkSettings):
        assert "method" not in inspect.signature(kind).parameters
    keys = {*census.MECHANISMS, *relational.FITS}
    functions = {
        **ENTRY_POINTS,
        "census.post_process": census.post_process,
        "census.build_problem": census.build_problem,
        "relational.links.plan": relational.links.plan,
    }
    for entry, function in functions.items():
        method = inspect.signature(function).parameters.get("method")
        assert method is None or method.default not in keys, (
            f"{entry}: method= defaults to {method.default!r}, a mechanism or link-fit key"
        )
    assert {"mechanism", "fit"} <= set(glossary())
