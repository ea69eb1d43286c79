"""``dpopt compare``: every applicable method on every instance of a suite, and the check.

- :mod:`~dpopt.compare.suite_runs` — :func:`run`, :func:`check`, :func:`check_report` and the
  table/JSON/CSV/plot writers (``dpopt.compare.runner``, its former name, is deprecated);
- :mod:`~dpopt.compare.instance` — :class:`Instance`, a named benchmark instance;
- :mod:`~dpopt.compare.hdmm`, :mod:`~dpopt.compare.census`, :mod:`~dpopt.compare.dgm`,
  :mod:`~dpopt.compare.eigen` — each family's suites (``SUITES``);
- :mod:`~dpopt.compare.strategy_utility`, :mod:`~dpopt.compare.census_utility` — the
  ``utility`` experiments: each family's release against its trivial baseline across ε;
- :mod:`~dpopt.compare.audits` — empirical privacy audits of the mechanisms (:data:`AUDITS`,
  :func:`run_audit`).
"""

from typing import TYPE_CHECKING, Any

from dpopt.compare.catalog import SUITE_TIMES, format_listing, list_suites
from dpopt.deprecation import moved_modules, warn_renamed
from dpopt.errors import MissingAttribute

MOVED = {"dpopt.compare.runner": "dpopt.compare.suite_runs"}
"""The former module name → the module it is now (imports warn until dpopt 0.3)."""
moved_modules(MOVED)

if TYPE_CHECKING:
    from dpopt.compare.audits import AUDITS, run_audit
    from dpopt.compare.instance import Instance
    from dpopt.compare.suite_runs import (
        FAMILY_EXPERIMENTS,
        FAMILY_SUITES,
        CheckReport,
        InstanceCheck,
        Interrupted,
        Record,
        best_exact,
        check,
        check_report,
        experiments,
        format_growth,
        format_rows,
        format_summary,
        format_table,
        growth_exponents,
        instances,
        plot_formats,
        records_as_dicts,
        run,
        suites,
        write_csv,
        write_json,
        write_plot,
    )


def __getattr__(name: str) -> Any:
    """The suite runs' names load the families' suites (and their solvers) on first use, so
    ``dpopt compare --list`` (:mod:`dpopt.compare.catalog`) stays instant; ``runner`` is the
    former name of :mod:`~dpopt.compare.suite_runs` (a warning)."""
    if name == "Instance":
        from dpopt.compare import instance

        return instance.Instance
    if name in ("AUDITS", "run_audit"):
        from dpopt.compare import audits

        return getattr(audits, name)
    if name in __all__ or name == "runner":
        import importlib

        module = importlib.import_module("dpopt.compare.suite_runs")
        if name == "runner":
            warn_renamed("module dpopt.compare.runner", "module dpopt.compare.suite_runs")
            return module
        return getattr(module, name)
    raise MissingAttribute(f"module 'dpopt.compare' has no attribute {name!r}")


__all__ = [
    "AUDITS",
    "FAMILY_EXPERIMENTS",
    "FAMILY_SUITES",
    "SUITE_TIMES",
    "CheckReport",
    "Instance",
    "InstanceCheck",
    "Interrupted",
    "Record",
    "best_exact",
    "check",
    "check_report",
    "experiments",
    "format_growth",
    "format_listing",
    "format_rows",
    "format_summary",
    "format_table",
    "growth_exponents",
    "instances",
    "list_suites",
    "plot_formats",
    "records_as_dicts",
    "run",
    "run_audit",
    "suites",
    "write_csv",
    "write_json",
    "write_plot",
]
