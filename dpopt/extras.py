"""Optional dependencies, loaded where they are used with an error that names the extra that
installs them (pyproject.toml, ``[project.optional-dependencies]``): ``dask`` (the Dask block
release and Parquet files), ``pgmpy`` (DGM networks to and from pgmpy models), ``plots``
(``dpopt compare --plot``)."""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

from dpopt.errors import InvalidInput, MissingExtra

__all__ = ["EXTRAS", "load_pyarrow", "require"]

EXTRAS = {"pyarrow": "dask", "pyarrow.parquet": "dask", "pgmpy": "pgmpy", "matplotlib": "plots"}
"""The extra that installs each optional module."""


def require(module: str, purpose: str) -> ModuleType:
    """``module`` imported, or an ImportError saying what needs it (``purpose``) and the
    ``pip install 'dpopt[extra]'`` that installs it."""
    top = module.split(".")[0] if isinstance(module, str) else None
    if top not in EXTRAS:
        raise InvalidInput(f"module must be an optional module of {sorted(EXTRAS)}, got {module!r}")
    try:
        return importlib.import_module(module)
    except ImportError as err:
        raise MissingExtra(
            f"{purpose} needs {top}: install the extra, pip install 'dpopt[{EXTRAS[top]}]'"
        ) from err


def load_pyarrow() -> Any:
    """pyarrow with its Parquet module, or an ImportError naming the extra that installs it."""
    require("pyarrow.parquet", "Parquet files")
    return require("pyarrow", "Parquet files")
