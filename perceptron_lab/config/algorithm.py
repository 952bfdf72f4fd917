"""The rules across keys of the ``algorithm`` section (ALMA's primal form, the primal form's
kernel, the budgeted algorithms' prediction rules), run by the validator of
:mod:`perceptron_lab.config.load` with the other rules."""

from __future__ import annotations

from collections.abc import Mapping

from perceptron_lab import constants as C
from perceptron_lab.config.checks import INVALID


def _valid(*values) -> bool:
    return all(v is not INVALID for v in values)


def rule_alma_primal(v) -> None:
    alg, ker = v.values["algorithm"], v.values["kernel"]
    name, p, kind = alg.get("name"), alg.get("p"), ker.get("type")
    if _valid(name, p, kind) and name == "alma" and p is not None and p > 2 and kind != "linear":
        v.line(("algorithm", "p"), f"algorithm.p = {v.shown('algorithm', 'p')} with kernel.type = {kind!r}: "
               "ALMA with p > 2 runs in primal form only; use kernel.type: linear")


def rule_primal_kernel(v) -> None:
    form, kind = v.values["algorithm"].get("form"), v.values["kernel"].get("type")
    if _valid(form, kind) and form == "primal" and kind != "linear":
        v.line(("algorithm", "form"), f"algorithm.form = 'primal' with kernel.type = {kind!r}: "
               "the primal form keeps an explicit weight vector, which only the linear kernel has; "
               "use algorithm.form: auto or dual")


def rule_budget_rules(v) -> None:
    """Budgeted algorithms (the config's, or any in a grid over algorithm.name) predict with the rules
    last, avg and vote only (last and avg by default); any other rule given is an error."""
    name, rules = v.values["algorithm"].get("name"), v.values["prediction"].get("rules")
    grid = v.values["evaluation"].get("grid")
    names = [name]
    if _valid(grid) and isinstance(grid, Mapping) and "algorithm.name" in grid:
        names += [g for g in grid["algorithm.name"] if isinstance(g, str)]
    budgeted = [n for n in names if _valid(n) and n in C.BUDGET_ALGORITHMS]
    if _valid(rules) and budgeted:
        if ("prediction", "rules") not in v.given:
            v.values["prediction"]["rules"] = C.BUDGET_DEFAULT_RULES  # the default for budgeted runs
            return
        bad = [r for r in rules if r not in C.BUDGET_RULES]
        if bad:
            v.line(("prediction", "rules"), f"prediction.rules {bad} with algorithm.name = {budgeted[0]!r}: a "
                   f"budgeted algorithm predicts with the rules {', '.join(C.BUDGET_RULES)} only (the others pick "
                   "hypotheses by a count or time slice its removals and shrinkings do not keep); set "
                   "prediction.rules: [last, avg, vote]")
