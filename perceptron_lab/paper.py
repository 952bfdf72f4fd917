"""Published results tables, shipped with the package as CSV transcriptions.

The files live in ``perceptron_lab/reference/`` (see its ``README.md`` for the column meanings
and the transcription notes). Each file holds one table in long format, one printed cell per
row; ``value`` is the printed number (thousands separators and ``%`` removed).
"""

from __future__ import annotations

from importlib import resources

import pandas as pd

_PACKAGE = "perceptron_lab"
_FOLDER = "reference"


def _reference_dir():
    return resources.files(_PACKAGE).joinpath(_FOLDER)


def reference_tables() -> list[str]:
    """Names of the packaged tables (file names without ``.csv``), sorted."""
    return sorted(p.name[:-4] for p in _reference_dir().iterdir() if p.name.endswith(".csv"))


def reference_table(name: str) -> pd.DataFrame:
    """One packaged reference table, e.g. ``reference_table("fs1999_table1")``.

    ``name`` may be given with or without the ``.csv`` suffix. Numeric columns are parsed as
    numbers (``value`` as float); cells the paper leaves empty have no row.
    """
    stem = name[:-4] if name.endswith(".csv") else name
    path = _reference_dir().joinpath(f"{stem}.csv")
    if not path.is_file():
        raise KeyError(f"no reference table {stem!r}; available: {', '.join(reference_tables())}")
    with path.open("r", encoding="utf-8") as fh:
        df = pd.read_csv(fh)
    if "value" in df.columns:
        df["value"] = pd.to_numeric(df["value"], errors="raise").astype(float)
    return df


def reference_readme() -> str:
    """The transcription notes (``reference/README.md``) as text."""
    return _reference_dir().joinpath("README.md").read_text(encoding="utf-8")
