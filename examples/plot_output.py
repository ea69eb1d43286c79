"""Where the examples write their plots: ``--out`` (default ``examples/output/``, git-ignored)
and ``--no-plot``; :func:`save` creates the folder and writes one PNG per example."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

OUTPUT = Path(__file__).resolve().parent / "output"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``--out FOLDER`` and ``--no-plot``."""
    parser.add_argument(
        "--out",
        type=Path,
        default=OUTPUT,
        help="folder for the plot, created if missing (default: examples/output)",
    )
    parser.add_argument("--no-plot", action="store_true", help="do not write the plot")


def save(figure: Any, folder: Path, name: str) -> Path:
    """Write ``figure`` as ``folder/name`` (120 dpi), close it and say where it went."""
    import matplotlib.pyplot as plt

    figure.tight_layout()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    figure.savefig(path, dpi=120)
    plt.close(figure)
    print(f"wrote {path}")
    return path
