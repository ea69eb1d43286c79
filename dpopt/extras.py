"""Optional dependencies, loaded where they are used with an error that names the extra that
installs them (pyproject.toml, ``[project.optional-dependencies]``)."""

from __future__ import annotations

from typing import Any

__all__ = ["load_pyarrow"]


def load_pyarrow() -> Any:
    """pyarrow with its Parquet module, or an ImportError naming the extra that installs it."""
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError as err:  # pragma: no cover - the extra is installed in tests
        raise ImportError(
            "Parquet files need pyarrow: install the extra, pip install 'dpopt[dask]'"
        ) from err
    return pyarrow
