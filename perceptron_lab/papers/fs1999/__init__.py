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
)
