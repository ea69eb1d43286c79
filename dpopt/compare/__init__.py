"""``dpopt compare``: every applicable method on every instance of a suite, and the check.

- :mod:`~dpopt.compare.runner` — :func:`run`, :func:`check`, :func:`check_report` and the
  table/JSON/CSV/plot writers;
- :mod:`~dpopt.compare.instance` — :class:`Instance`, a named benchmark instance;
- :mod:`~dpopt.compare.hdmm`, :mod:`~dpopt.compare.census`, :mod:`~dpopt.compare.dgm`,
  :mod:`~dpopt.compare.eigen` — each family's suites (``SUITES``);
- :mod:`~dpopt.compare.strategy_utility`, :mod:`~dpopt.compare.census_utility` — the
  ``utility`` experiments: each family's release against its trivial baseline across ε;
- :mod:`~dpopt.compare.audits` — empirical privacy audits of the mechanisms.
"""

from dpopt.compare.instance import Instance
from dpopt.compare.runner import (
    FAMILY_EXPERIMENTS,
    FAMILY_SUITES,
    SUITE_TIMES,
    CheckReport,
    InstanceCheck,
    Interrupted,
    Record,
    best_exact,
    check,
    check_report,
    experiments,
    format_growth,
    format_listing,
    format_summary,
    format_table,
    growth_exponents,
    instances,
    list_suites,
    records_as_dicts,
    run,
    suites,
    write_csv,
    write_json,
    write_plot,
)

__all__ = [
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
    "format_summary",
    "format_table",
    "growth_exponents",
    "instances",
    "list_suites",
    "records_as_dicts",
    "run",
    "suites",
    "write_csv",
    "write_json",
    "write_plot",
]
