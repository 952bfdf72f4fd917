"""The ``dataset`` keys of a data file of one's own (``path``, ``test_path``, ``format``, ``label``,
``categorical``): the rule that checks them together (run by the validator of
:mod:`perceptron_lab.config.load` with the other rules across keys), and what an override of the data
source drops."""

from __future__ import annotations

import os

from perceptron_lab import constants as C
from perceptron_lab.config.checks import INVALID

#: The keys that describe a file of one's own; they go with dataset.path.
OWN_FILE_KEYS = ("path", "test_path", "format", "label", "categorical")


def _valid(*values) -> bool:
    return all(v is not INVALID for v in values)


def drop_other_source(dataset: dict, changes) -> None:
    """A registered dataset and a file of one's own exclude each other: an override that sets one
    (``dataset.path`` or ``dataset.name``) drops the other from the resolved ``dataset`` mapping."""
    if "dataset.path" in changes and "dataset.name" not in changes:
        dataset.pop("name", None)
    if "dataset.name" in changes and "dataset.path" not in changes:
        for key in OWN_FILE_KEYS:
            dataset.pop(key, None)


def rule_dataset_source(v) -> None:
    """dataset.name or dataset.path (not both); the keys of a file of one's own only with a path; a
    format the file's extension or dataset.format gives; a label column for CSV/TSV; a test file
    for an evaluation that needs one."""
    ds, ev = v.values["dataset"], v.values["evaluation"]
    name, path = ds.get("name"), ds.get("path")
    if not _valid(name, path):
        return
    if name is None and path is None:
        v.line(("dataset", "name"), "missing key dataset.name (required; or dataset.path for a data file of "
               "your own)")
        return
    if name is not None and path is not None:
        v.line(("dataset", "path"), f"dataset.name = {v.shown('dataset', 'name')} and dataset.path = "
               f"{v.shown('dataset', 'path')}: a run reads a registered dataset or a file of your own; remove one")
        return
    own = ("test_path", "label", "categorical") + (("format",) if ("dataset", "format") in v.given else ())
    if path is None:
        for key in own:
            if ("dataset", key) in v.given:
                v.line(("dataset", key), f"dataset.{key} describes a data file of your own; set dataset.path "
                       f"or remove dataset.{key}")
        return
    if ds.get("params"):
        v.line(("dataset", "params"), "dataset.params are the arguments of a synthetic dataset; a file "
               "given by dataset.path takes none")
    fmt = ds.get("format")
    if not _valid(fmt):
        return
    kinds: dict[str, str] = {}
    for key in ("path", "test_path"):
        file = ds.get(key)
        if file is None or not _valid(file):
            continue
        ext = os.path.splitext(file)[1].lower()
        kind = C.USER_EXTENSIONS.get(ext) if fmt == "auto" else fmt
        if kind is None:
            v.line(("dataset", key), f"dataset.{key} = {v.shown('dataset', key)}: cannot tell the format from "
                   f"the extension {ext or '(none)'!r}; set dataset.format: csv, tsv, libsvm or npz")
            return
        kinds[key] = kind
    if kinds.get("test_path") not in (None, kinds["path"]):
        v.line(("dataset", "test_path"), f"dataset.test_path is {kinds['test_path']} but dataset.path is "
               f"{kinds['path']}: give both files in one format")
        return
    table = kinds["path"] in ("csv", "tsv")
    if table and ds.get("label") is None:
        v.line(("dataset", "label"), f"missing key dataset.label (required for a {kinds['path'].upper()} file: "
               "the header name of the label column)")
    for key in ("label", "categorical"):
        if not table and ("dataset", key) in v.given:
            v.line(("dataset", key), f"dataset.{key} applies to CSV/TSV files; a {kinds['path']} file has its "
                   "labels apart from its features: remove it")
    mode, outer, merge = ev.get("mode"), ev.get("outer"), ds.get("merge_splits")
    if ds.get("test_path") is None and _valid(mode, outer):
        if mode == "holdout" or (mode == "nested" and outer == "holdout"):
            what = "evaluation.mode = 'holdout'" if mode == "holdout" else "evaluation.outer = 'holdout'"
            fix = "evaluation.mode: kfold" if mode == "holdout" else "evaluation.outer: kfold"
            v.line(("dataset", "path"), f"{what} tests on a test file, and dataset.path has none: set "
                   f"dataset.test_path, or {fix} to cross-validate")
        elif merge is True:
            v.line(("dataset", "merge_splits"), "dataset.merge_splits appends the test file to the training "
                   "file, and dataset.path has none: set dataset.test_path or remove dataset.merge_splits")
