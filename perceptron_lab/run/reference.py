"""Published results tables, shipped with each paper's plug-in as CSV transcriptions.

The files live in ``perceptron_lab/papers/<paper>/reference/`` (``perceptron_lab/papers/REFERENCE.md``
gives the column meanings and the transcription notes). Each file holds one table in long format,
one printed cell per row; ``value`` is the printed number (thousands separators and ``%``
removed).
"""

from __future__ import annotations

from importlib import resources

import pandas as pd

from perceptron_lab.config import plugins


def _files():
    """{table name: path} over every paper's reference folder."""
    out = {}
    for p in plugins.papers():
        d = p.reference_dir
        if d.is_dir():
            out.update({f.stem: f for f in d.iterdir() if f.suffix == ".csv"})
    return out


def reference_tables() -> list[str]:
    """Names of the packaged tables (file names without ``.csv``), sorted."""
    return sorted(_files())


def reference_table(name: str) -> pd.DataFrame:
    """One packaged reference table, e.g. ``reference_table("fs1999_table1")``.

    ``name`` may be given with or without the ``.csv`` suffix. Numeric columns are parsed as
    numbers (``value`` as float); cells the paper leaves empty have no row. A damaged file (not
    UTF-8, cut short, empty) raises :class:`~perceptron_lab.errors.DamagedFileError`.
    """
    stem = name[:-4] if name.endswith(".csv") else name
    files = _files()
    if stem not in files:
        raise KeyError(f"no reference table {stem!r}; available: {', '.join(sorted(files))}")
    import io

    from perceptron_lab.run.store import read_back_text

    fix = "the package's copy is damaged: reinstall perceptron_lab"
    df = pd.read_csv(io.StringIO(read_back_text(files[stem], fix=fix)))
    if df.isna().all(axis=1).any() or df.empty:
        from perceptron_lab.run.store import damaged

        raise damaged(files[stem], "rows without cells" if not df.empty else "no cells", fix)
    if "value" in df.columns:
        try:
            df["value"] = pd.to_numeric(df["value"], errors="raise").astype(float)
        except (ValueError, TypeError) as exc:
            from perceptron_lab.run.store import damaged

            raise damaged(files[stem], f"a value is not a number: {exc}", fix) from None
    return df


def reference_readme() -> str:
    """The transcription notes (``papers/REFERENCE.md``) as text."""
    return resources.files("perceptron_lab").joinpath("papers", "REFERENCE.md").read_text(encoding="utf-8")
