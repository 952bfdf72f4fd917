"""perceptron_lab/run/comparison.py: a comparison's text columns, whatever dtype a CSV gave them."""

from __future__ import annotations

import math
import warnings

import pandas as pd

from perceptron_lab.run.comparison import normalize, text_column


def test_text_column_fills_an_all_empty_float_column_without_a_warning():
    # an all-empty column of a CSV reads as float64 NaN; pandas refuses text as its fill value
    s = pd.Series([math.nan, math.nan], dtype="float64")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = text_column(s)
    assert out.tolist() == ["", ""]


def test_text_column_keeps_text_and_writes_numbers_as_text():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = text_column(pd.Series(["runs", None, 3.5], dtype=object))
    assert out.tolist() == ["runs", "", "3.5"]


def test_normalize_reads_empty_text_columns_of_a_csv():
    df = pd.DataFrame({"row": ["a", "b"], "metric": ["test_error_pct"] * 2, "T": [1, 2],
                       "ours_mean": [1.0, 2.0], "ours_std": [0.1, 0.2], "n_runs": [10, 10],
                       "paper": [1.0, 2.0], "tolerance": [0.3, 0.3],
                       "sampling_basis": [math.nan, math.nan], "block": [math.nan, math.nan]})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = normalize(df)
    assert out["block"].tolist() == ["", ""]
    assert out["column"].tolist() == ["T=1", "T=2"]
    # the sampling range filled from the runs, the basis said
    assert out["sampling_basis"].tolist() == ["runs", "runs"]
