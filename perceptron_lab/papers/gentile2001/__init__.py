"""Gentile (2001), *A new approximate maximal margin classification algorithm*: ALMA_p with
kernels and p-norms (Tables 1-6, the margin distributions of Figures 3-5)."""

from __future__ import annotations

from pathlib import Path

from perceptron_lab.config.plugins import Paper

HERE = Path(__file__).resolve().parent


def write_outputs(cfg, table, out, results, n_train=None) -> list[Path]:
    """The tables a holdout run fills (the paper's tables are holdout results; its cross-validation
    runs, e.g. the kernel-width searches, write search.csv only). A run with an explicit B (not the
    shorthand 1/alpha) is compared with the paper's ALMA_p(alpha) rows as well: a numeric B in
    tables of its own (suffix _B), a symbolic one (sqrt8/alpha: Table 6 as the paper's own counts
    identify its B) in the paper's tables."""
    if cfg.evaluation.mode != "holdout":
        return []
    from perceptron_lab.papers.gentile2001.tables import write_gentile_tables

    B = getattr(cfg.algorithm, "B", None)
    return write_gentile_tables(Path(out) / "results.csv", out, any_B=B is not None,
                                suffix="_B" if isinstance(B, (int, float)) else "")


def reproduce_figures(results_dir, data_dir=None, progress: bool = True) -> list[Path]:
    """Figures 3-5, trained again with the Table configs' settings and orders (no results read)."""
    from perceptron_lab.papers.gentile2001.figures import gentile_margin_figures

    return gentile_margin_figures(Path(results_dir) / "gentile2001", data_dir=data_dir, progress=progress)


def scoring_rule() -> str:
    from perceptron_lab.papers.gentile2001 import tables as g

    return (f"test error within max({g.ERROR_ABS_TOL_PP:g} points, {100 * g.ERROR_REL_TOL:g}% of the paper's "
            f"value); corrections and support vectors within {100 * g.COUNT_REL_TOL:g}%.")


PAPER = Paper(
    name="gentile2001",
    title="Gentile (2001): ALMA_p",
    short="Gentile",
    tables=("table1", "table2", "table3", "table4", "table5", "table6"),
    scoring_rule=scoring_rule,
    write_outputs=write_outputs,
    reference_dir=HERE / "reference",
    figures={"gentile2001_figure3": "Gentile Figure 3 (margin distributions, USPS)",
             "gentile2001_figure4": "Gentile Figure 4 (margin distributions, artificial data)",
             "gentile2001_figure5": "Gentile Figure 5 (last vs avg margins, artificial data)"},
    reproduce_figures=reproduce_figures,
    figures_read_runs=False,
)
