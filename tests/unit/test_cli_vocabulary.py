"""One vocabulary on the ``dpopt`` command line: every subcommand's parser, walked, keeps a
secret noise key and a public seed under different flags (the secret one is ``--noise-key``,
on the release commands only), and every flag says what it does. The former module names
(``dpopt.cli_types``, ``dpopt.plan_cli``, ``dpopt.cli``'s moved constants) answer for one
release with a DeprecationWarning."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections import defaultdict
from collections.abc import Iterator
from importlib.metadata import entry_points

import pytest

from dpopt import cli
from dpopt.cli.release_options import DeprecatedAlias

RELEASE_COMMANDS = {
    "dgm learn",
    "dgm legacy",
    "census release",
    "hdmm answer",
    "relational synthesize",
}
"""The subcommands that draw a release's noise from private data (``dgm legacy``: the deprecated
``dpopt dgm --network …``)."""


def _commands(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """(``"census release"``, its parser) for every subcommand that runs, at any depth."""
    groups = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not groups:
        yield " ".join(path), parser
    for group in groups:
        for name, sub in group.choices.items():
            yield from _commands(sub, (*path, name))


COMMANDS = dict(_commands(cli.build_parser()))


def _flags(kind: type | None = None) -> Iterator[tuple[str, argparse.Action]]:
    """(command, action) of every option and positional; only those of ``kind`` when given,
    else every one but the deprecated aliases."""
    for command, parser in COMMANDS.items():
        for action in parser._actions:
            deprecated = isinstance(action, DeprecatedAlias)
            if (kind is None and not deprecated) or (kind is not None and isinstance(action, kind)):
                yield command, action


def _meaning(action: argparse.Action) -> str | None:
    """``secret`` for a noise key, ``public`` for a seed (``--seed``, ``--geo-seed``; not a
    count such as ``--seeds``), None for anything else."""
    named = any(flag.endswith(("seed", "key")) for flag in action.option_strings)
    if action.dest == "noise_key" or "secret" in (action.help or "").lower():
        return "secret"
    return "public" if named else None


def test_the_walk_reaches_every_subcommand() -> None:
    assert {"compare", "dgm learn", "census release", "census generate", "check"} <= set(COMMANDS)
    assert {f"plan {family}" for family in ("hdmm", "eigen", "census", "dgm", "relational")} <= set(
        COMMANDS
    )


def test_no_flag_is_both_a_secret_noise_key_and_a_public_seed() -> None:
    meanings: dict[str, set[str]] = defaultdict(set)
    where: dict[str, list[str]] = defaultdict(list)
    for command, action in _flags():
        meaning = _meaning(action)
        for flag in action.option_strings if meaning else ():
            meanings[flag].add(meaning)  # type: ignore[arg-type]
            where[flag].append(f"{command}: {meaning}")
    both = {flag: where[flag] for flag, found in meanings.items() if len(found) > 1}
    assert both == {}
    assert {flag for flag, found in meanings.items() if "secret" in found} == {"--noise-key"}
    for command, action in _flags():
        if _meaning(action) == "public":  # a seed says it is public
            assert "public" in (action.help or ""), (command, action.option_strings)


def test_the_noise_key_is_on_the_release_commands_only_and_says_it_is_secret() -> None:
    keyed = {c for c, parser in COMMANDS.items() if "--noise-key" in parser._option_string_actions}
    assert keyed == RELEASE_COMMANDS
    for command in RELEASE_COMMANDS:
        action = COMMANDS[command]._option_string_actions["--noise-key"]
        assert action.default is None and not action.required  # fresh OS entropy by default
        assert "secret key" in action.help and "never publish" in action.help, command


def test_every_flag_has_help_text() -> None:
    silent = [
        (command, action.option_strings or action.dest)
        for command, action in _flags()
        if not action.help or action.help == argparse.SUPPRESS
    ]
    assert silent == []


def test_the_deprecated_seed_of_a_release_is_hidden_and_names_the_noise_key() -> None:
    aliases = {(command, *a.option_strings): a.new for command, a in _flags(DeprecatedAlias)}
    assert aliases == {
        **{(command, "--seed"): "--noise-key" for command in RELEASE_COMMANDS},
        ("census release", "--memory-limit"): "--max-memory",
        ("census release", "--input"): "--data",
        ("plan dgm", "--seeds"): "--releases",
        ("plan relational", "--seeds"): "--releases",
    }
    for command, alias in _flags(DeprecatedAlias):
        new = COMMANDS[command]._option_string_actions[alias.new]  # type: ignore[attr-defined]
        assert alias.help == argparse.SUPPRESS and alias.dest == new.dest


@pytest.mark.parametrize(
    ("old", "new"), [("dpopt.cli_types", "dpopt.cli.options"), ("dpopt.plan_cli", "dpopt.cli.plan")]
)
def test_the_old_module_names_import_with_a_warning(old: str, new: str) -> None:
    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=f"use module {new}"):
        module = importlib.import_module(old)
    assert module is importlib.import_module(new)
    assert module.__spec__.name == new  # type: ignore[union-attr]


def test_the_old_names_of_the_cli_module_answer_with_a_warning() -> None:
    with pytest.warns(DeprecationWarning, match="use dpopt.cli.compare.EPILOG"):
        assert cli.EPILOG is cli.compare.EPILOG
    with pytest.warns(DeprecationWarning, match="release_options.warn_if_small_noise_key"):
        from dpopt.cli import warn_if_small_seed
    assert warn_if_small_seed is cli.release_options.warn_if_small_noise_key
    old = importlib.import_module("dpopt.plan_cli")
    assert old.parse_workload is importlib.import_module("dpopt.cli.workloads").parse_workload
    with pytest.raises(AttributeError, match="no attribute 'NOT_A_NAME'"):
        cli.NOT_A_NAME  # noqa: B018


def test_the_console_script_and_python_m_run_the_package_s_main() -> None:
    (script,) = entry_points(group="console_scripts", name="dpopt")
    assert script.value == "dpopt.cli:main" and script.load() is cli.main
    assert importlib.import_module("dpopt.cli.__main__").main is cli.main
