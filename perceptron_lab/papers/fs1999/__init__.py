"""Freund & Schapire (1999), *Large margin classification using the perceptron algorithm*: the
voted perceptron with polynomial kernels on MNIST (Tables 1-3, Figure 2; Table 2's sparsity bound
is Graepel, Herbrich & Williamson 2000)."""

from __future__ import annotations

from pathlib import Path

from perceptron_lab.config.plugins import Paper

HERE = Path(__file__).resolve().parent


def write_outputs(cfg, table, out, results, n_train=None) -> list[Path]:
    """Every table the run's results can fill (a degree's run fills its rows of Tables 1-3) and,
    for runs with a learning curve, Figure 2."""
    from perceptron_lab.papers.fs1999.tables import write_fs1999_tables

    written = list(write_fs1999_tables(Path(out) / "results.csv", out, n_train=n_train))
    if cfg.output.figures and cfg.training.curve_every:
        from perceptron_lab.papers.fs1999.figures import plot_fs1999_figure2

        written.append(plot_fs1999_figure2(results, Path(out) / "fs1999_figure2.png",
                                           title="Freund & Schapire (1999) Figure 2, reproduced: MNIST test "
                                                 "error vs epochs (lines: ours; open markers: the paper's Table 1)"))
    return written


def reproduce_figures(results_dir, data_dir=None) -> list[Path]:
    """Figure 2 over every degree's run (``results/fs1999/d*/``)."""
    import pandas as pd

    from perceptron_lab.papers.fs1999.figures import plot_fs1999_figure2

    root = Path(results_dir) / "fs1999"
    runs = sorted(root.glob("d*/results.csv"))
    if not runs:
        return []
    from perceptron_lab.run.store import read_back_results

    curves = pd.concat([read_back_results(p, ["class", "rule", "metric", "value", "epoch"]) for p in runs])
    curves = curves[curves["class"] == "all"]
    return [plot_fs1999_figure2(curves, root / "fs1999_figure2.png",
                                title="Freund & Schapire (1999) Figure 2, reproduced: MNIST test error vs "
                                      "epochs (lines: ours; open markers: the paper's Table 1)")]


def scoring_rule() -> str:
    from perceptron_lab.papers.fs1999 import tables as fs

    return (f"test error within max({fs.ERROR_ABS_TOL_PP:g} points, {100 * fs.ERROR_REL_TOL:g}% of the paper's "
            f"value); support vectors and mistakes within {100 * fs.COUNT_REL_TOL:g}%; the GHW bound (Table 2) "
            f"within {100 * fs.BOUND_REL_TOL:g}%. Scored for d >= {fs.SCOPE_MIN_DEGREE} and T >= "
            f"{fs.SCOPE_MIN_T:g}; cells with d = 1 or T = 0.1 are shown, not scored.")


def _printed_decimals(metric: str) -> int:
    """The most decimals the paper prints for ``metric`` (its reference tables' value strings)."""
    import csv

    most = 0
    for f in sorted((HERE / "reference").glob("fs1999_table*.csv")):
        with open(f, newline="", encoding="utf-8") as fh:
            for row in csv.DictReader(fh):
                if row.get("metric") == metric and "." in row.get("value", ""):
                    most = max(most, len(row["value"].split(".")[1]))
    return most


def tolerance_basis() -> list[str]:
    """Why each tolerance is what it is: the printed precision, the runs, the spread the paper gives."""
    from perceptron_lab.papers.fs1999 import tables as fs

    dec = _printed_decimals("test_error_pct")
    half = 0.5 * 10.0 ** -dec
    return [
        f"Test error: the paper prints it with {dec} decimal{'s' if dec != 1 else ''} (rounding up to {half:g} "
        f"points), each a mean over 10 random permutations of the training sequence (\"Each experiment was "
        f"repeated 10 times\", section 5), with no spread printed. The absolute part, {fs.ERROR_ABS_TOL_PP:g} points, "
        f"is {fs.ERROR_ABS_TOL_PP / half:g} times that rounding: room for the rounding plus the spread of a mean of "
        "10 permutations, which the paper does not give (ours is shown beside each cell). On MNIST's 10000 test "
        "examples one example is 0.01 points.",
        f"The relative part, {100 * fs.ERROR_REL_TOL:g}% of the paper's value, takes over above "
        f"{fs.ERROR_ABS_TOL_PP / fs.ERROR_REL_TOL:g}% error (small T, the random rule), so that a large error gets "
        "room in proportion to its size.",
        f"Support vectors and mistakes: integer totals over the 10 labels, each a mean of the 10 runs and printed "
        f"without spread; {100 * fs.COUNT_REL_TOL:g}% of the paper's value. The GHW bound is a function of the "
        f"support-vector count, hence the same {100 * fs.BOUND_REL_TOL:g}%.",
        f"Scope, not a tolerance: cells with d < {fs.SCOPE_MIN_DEGREE} or T < {fs.SCOPE_MIN_T:g} are compared "
        "and shown but not scored (see How cells are scored).",
    ]


PAPER = Paper(
    name="fs1999",
    title="Freund & Schapire (1999): the voted perceptron on MNIST",
    short="Freund & Schapire",
    tables=("table1", "table2", "table3"),
    scoring_rule=scoring_rule,
    write_outputs=write_outputs,
    reference_dir=HERE / "reference",
    figures={"fs1999_figure2": "Freund & Schapire Figure 2 (test error vs epochs)"},
    reproduce_figures=reproduce_figures,
    tolerance_basis=tolerance_basis,
)
