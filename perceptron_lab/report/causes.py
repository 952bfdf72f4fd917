"""Why a scored cell lies outside tolerance: one cause per cell, from a fixed vocabulary.

Every in-scope cell outside its tolerance gets exactly one cause:

* ``sampling`` -- computed, never asserted: the paper's value lies in the range our own
  re-sampling gives (:func:`perceptron_lab.run.comparison.sampling_covers`: the central 95% of
  independent draws of a data set, or the 95% interval of a mean over folds or permutations).
* otherwise the first rule of the causes file (``results/causes.yaml``) that matches the cell:
  ``data-copy`` (the paper's copy of the data differs from ours, shown), ``data-copy-inferred`` (the
  same cause inferred from the pattern of misses, not shown: the note names what else would give
  that pattern), ``protocol-unspecified`` (the
  paper leaves unstated a choice that moves the cell; the note names it), ``paper-inconsistent``
  (the paper contradicts itself; the note cites both places) or ``unexplained``;
* ``unexplained`` when no rule matches.

A rule names the cells it covers with shell-style patterns (``fnmatch``) on the comparison's
table stem (``kw2007_table3``), the run folder's name (``table3_usps``) and the cell's ``block``,
``row`` and ``column``; a missing field matches anything. Each rule carries a one-line ``note``
with the evidence. Rules that match no cell outside tolerance are reported as unused, so the file
cannot silently go stale.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from perceptron_lab.errors import ConfigError

#: Cause -> what it means (the report prints these).
VOCABULARY = {
    "sampling": "our own spread (draws of the data, folds, orders) covers the paper's value; computed",
    "data-copy": "the paper's copy of the data differs from ours",
    "data-copy-inferred": ("inferred, not shown: the pattern of misses points to the paper's copy of the data; "
                           "the note names what else would give it"),
    "protocol-unspecified": "the paper leaves unstated a choice that moves the cell",
    "paper-inconsistent": "the paper contradicts itself",
    "unexplained": "no cause backed by evidence",
}
#: Causes a rule may assert (``sampling`` is computed from the results).
ASSERTABLE = ("data-copy", "data-copy-inferred", "protocol-unspecified", "paper-inconsistent", "unexplained")
FILE_NAME = "causes.yaml"
_FIELDS = ("table", "run", "block", "row", "column")


@dataclass(frozen=True)
class Rule:
    cause: str
    note: str
    table: str = "*"
    run: str = "*"
    block: str = "*"
    row: str = "*"
    column: str = "*"

    def matches(self, table: str, run: str, cell) -> bool:
        have = {"table": table, "run": run, "block": cell["block"], "row": cell["row"], "column": cell["column"]}
        return all(fnmatch.fnmatchcase(str(have[f]), getattr(self, f)) for f in _FIELDS)


def load_rules(path) -> list[Rule]:
    """The rules of a causes file; a missing file has none. A file that cannot be read (not UTF-8,
    not YAML) or holds a bad rule is one line and exit status 2
    (:class:`~perceptron_lab.errors.ConfigError`: the causes file is the report's config)."""
    import yaml

    path = Path(path)
    if not path.is_file():
        return []
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        why = "not UTF-8 text" if isinstance(exc, UnicodeDecodeError) else type(exc).__name__
        raise ConfigError(f"{path}: not a readable YAML file ({why}); fix it, or move it away to report without "
                          "causes") from None
    items = (data or {}).get("causes") if isinstance(data, dict) else None
    if not isinstance(items, list):
        raise ConfigError(f"{path}: expected a mapping with a 'causes' list")
    rules = []
    for i, item in enumerate(items, 1):
        where = f"{path}: causes[{i}]"
        if not isinstance(item, dict):
            raise ConfigError(f"{where} must be a mapping, got {item!r}")
        unknown = set(item) - set(_FIELDS) - {"cause", "note"}
        if unknown:
            raise ConfigError(f"{where}: unknown key {sorted(unknown)[0]!r}; expected some of "
                            f"{', '.join(_FIELDS + ('cause', 'note'))}")
        cause = item.get("cause")
        if cause == "sampling":
            raise ConfigError(f"{where}: 'sampling' is computed from the results, not asserted; remove the rule")
        if cause not in ASSERTABLE:
            raise ConfigError(f"{where}: cause must be one of {', '.join(ASSERTABLE)}, got {cause!r}")
        note = item.get("note")
        if not isinstance(note, str) or not note.strip():
            raise ConfigError(f"{where}: a rule needs a one-line 'note' with its evidence")
        rules.append(Rule(cause=cause, note=" ".join(note.split()),
                          **{f: str(item[f]) for f in _FIELDS if f in item}))
    return rules


def assign(outside: pd.DataFrame, covered: pd.Series, table: str, run: str, rules: list[Rule],
           used: set | None = None) -> pd.DataFrame:
    """``cause`` and ``cause_note`` for the cells of ``outside`` (scored, outside tolerance);
    ``covered`` says which of them our sampling range covers. Indices of the rules that matched
    are added to ``used``."""
    causes, notes = [], []
    for idx, cell in outside.iterrows():
        if bool(covered.loc[idx]):
            lo, hi, basis = cell.get("sampling_lo"), cell.get("sampling_hi"), cell.get("sampling_basis") or "runs"
            causes.append("sampling")
            notes.append(f"paper {cell['paper']:g} lies in our {basis} range [{lo:.2f}, {hi:.2f}]")
            continue
        for k, rule in enumerate(rules):
            if rule.matches(table, run, cell):
                causes.append(rule.cause)
                notes.append(rule.note)
                if used is not None:
                    used.add(k)
                break
        else:
            causes.append("unexplained")
            notes.append("")
    return outside.assign(cause=causes, cause_note=notes)


__all__ = ["VOCABULARY", "ASSERTABLE", "FILE_NAME", "Rule", "load_rules", "assign"]
