"""Mutation check: would the fast tests catch a plausible bug?

``python tests/tools/mutation_check.py [--only ID ...] [--out FILE]`` copies the working tree (the
files git tracks or would track, and numba's cache, with their times) to a scratch folder, runs
the fast test files named for each mutation there once unmutated (the baseline), then, for each
mutation in :data:`MUTATIONS`, changes one snippet of the copy, runs the CI test command
(``python -m pytest -q``) restricted to those files, with ``PLAB_DATA`` naming a folder that does
not exist (so every test that needs a downloaded data set is skipped, as in a CI without data), and
puts the file back. A mutation is *caught* when a test that passed on the baseline fails; the
first such test is recorded. The table goes to stdout and to ``--out`` (default
``tests/tools/MUTATIONS.md``).

Each mutation runs only the test files of its area (2 shared cores): a few minutes in all, most
of it numba recompiling the mutated engine module. Nothing in the working tree is changed.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Mutation:
    id: str
    what: str
    path: str
    old: str
    new: str
    tests: tuple
    count: int = 1          # occurrences of ``old`` replaced (all of them must be there)


GOLDEN = "tests/integration/test_golden_packaged.py"
BOUNDS = "tests/papers/test_tolerance_boundaries.py"
WRITERS = "tests/papers/test_comparison_writers.py"
RANDOM = "tests/model/test_random_rule.py"
ENGINE = "tests/engine/test_perceptron.py"

MUTATIONS = (
    Mutation("kw-tolerance-lt", "Khardon & Wachman: within when |diff| < tol (not <=)",
             "perceptron_lab/papers/kw2007/tables.py", "return bool(abs(ours - paper) <= tol + _EPS)",
             "return bool(abs(ours - paper) < tol + _EPS)", (BOUNDS, "tests/papers/kw2007/test_kw.py", WRITERS)),
    Mutation("fs-tolerance-lt", "Freund & Schapire: within when |diff| < tol (not <=)",
             "perceptron_lab/papers/fs1999/tables.py", "bool(abs(diff) <= tol + _EPS)",
             "bool(abs(diff) < tol + _EPS)", (BOUNDS, "tests/papers/fs1999/test_tables.py", WRITERS)),
    Mutation("gentile-tolerance-lt", "Gentile: within when |diff| < tol (not <=)",
             "perceptron_lab/papers/gentile2001/tables.py", "bool(abs(mean - paper) <= tol + _EPS)",
             "bool(abs(mean - paper) < tol + _EPS)", (BOUNDS, WRITERS)),
    Mutation("fs-tolerance-widened", "Freund & Schapire: test-error floor 0.3 -> 0.35 points",
             "perceptron_lab/papers/fs1999/tables.py", "ERROR_ABS_TOL_PP = 0.3", "ERROR_ABS_TOL_PP = 0.35",
             (BOUNDS, "tests/papers/fs1999/test_tables.py", WRITERS)),
    Mutation("kw-tolerance-widened", "Khardon & Wachman: 2 -> 2.5 points without an interval",
             "perceptron_lab/papers/kw2007/tables.py", "ACC_TOL_PP = 2.0", "ACC_TOL_PP = 2.5",
             (BOUNDS, "tests/papers/kw2007/test_kw.py", WRITERS)),
    Mutation("kw-slack-widened", "Khardon & Wachman: rounding slack 1e-9 -> 1e-4",
             "perceptron_lab/papers/kw2007/tables.py", "_EPS = 1e-9", "_EPS = 1e-4",
             (BOUNDS, "tests/papers/kw2007/test_kw.py", WRITERS)),
    Mutation("random-slice-0-to-T-1", "random rule: slice r drawn from 0..T-1 (not 0..T)",
             "perceptron_lab/model/predict.py", "integers(0, int(T) + 1, size=n_test)",
             "integers(0, int(T), size=n_test)", (RANDOM, ENGINE, GOLDEN)),
    Mutation("random-slice-same-key", "random rule: one stream for every checkpoint (T left out of the key)",
             "perceptron_lab/model/predict.py", "spawn_key=tuple(base.spawn_key) + (int(T),))",
             "spawn_key=tuple(base.spawn_key))", (RANDOM, ENGINE, GOLDEN)),
    Mutation("checkpoint-live-off-by-one", "checkpoint T: the vector created at step T counted as live",
             "perceptron_lab/model/hypotheses.py", 'np.searchsorted(self.step[h0 + 1:h1], T, side="left")',
             'np.searchsorted(self.step[h0 + 1:h1], T, side="right")', (ENGINE, RANDOM, GOLDEN)),
    Mutation("checkpoint-step-early", "primal engine: each checkpoint recorded one step early",
             "perceptron_lab/engine/linear.py", "{epochs_to_steps(c, n) for c in checkpoints}",
             "{max(epochs_to_steps(c, n) - 1, 1) for c in checkpoints}", (ENGINE, RANDOM, GOLDEN)),
    Mutation("normalized-swapped", "results rows: normalized and unnormalized rules swapped",
             "perceptron_lab/run/units.py", '(rule[:-5], "true") if rule.endswith("_norm") else (rule, "false")',
             '(rule[:-5], "false") if rule.endswith("_norm") else (rule, "true")', (GOLDEN, RANDOM)),
    Mutation("margin-sign-dual", "kernel perceptron: margin test y(s - theta) > -tau (sign flipped)",
             "perceptron_lab/engine/perceptron.py", "if y * (s_train - theta[c]) > tau_abs:",
             "if y * (s_train - theta[c]) > -tau_abs:", (ENGINE, GOLDEN)),
    Mutation("margin-sign-primal", "primal perceptron: margin test y(s - theta) > -tau (sign flipped)",
             "perceptron_lab/engine/linear.py", "if y * (s_train - th[q]) > tau_abs:",
             "if y * (s_train - th[q]) > -tau_abs:", (ENGINE, GOLDEN), count=2),
    Mutation("threshold-update-sign", "kernel perceptron: theta += eta y C (not -=)",
             "perceptron_lab/engine/perceptron.py", "theta[c] -= eta * y * C", "theta[c] += eta * y * C",
             (ENGINE, GOLDEN)),
    Mutation("alpha-bound-off-by-one", "primal perceptron: alpha + 1 updates per example allowed",
             "perceptron_lab/engine/linear.py", "if mcount[i, c] >= alpha_bound:", "if mcount[i, c] > alpha_bound:",
             (ENGINE, GOLDEN), count=2),
    Mutation("lambda-diagonal-without-eta", "lambda on the diagonal: lam K(x,x) alpha_x (eta left out)",
             "perceptron_lab/engine/perceptron.py", "s_train += y * lam * kdiag[i] * (eta * mcount[i, c])",
             "s_train += y * lam * kdiag[i] * mcount[i, c]", (ENGINE, "tests/papers/kw2007/test_kw_lambda.py", GOLDEN)),
    Mutation("vote-weight-swapped", "vote weights: survival and correct swapped",
             "perceptron_lab/model/hypotheses.py", '== "survival"', '== "correct"', (ENGINE, GOLDEN), count=2),
    Mutation("seed-spawn-swapped", "training order drawn from the rule's seed and vice versa",
             "perceptron_lab/engine/seeds.py", "order_seed, rule_seed = unit_seed(",
             "rule_seed, order_seed = unit_seed(", ("tests/engine/test_seeds.py", RANDOM, GOLDEN)),
    Mutation("seed-inner-fold-collision", "nested CV: inner fold 0 keyed [s, p, f, 0], the outer run's stream",
             "perceptron_lab/engine/seeds.py", "key.append(int(inner_fold) + 1)", "key.append(int(inner_fold))",
             ("tests/engine/test_seeds.py", RANDOM, GOLDEN)),
    Mutation("label-matrix-polarity", "binary labels: the first class positive",
             "perceptron_lab/engine/perceptron.py", "return np.where(y == 1, 1, -1).astype(np.int8)[:, None]",
             "return np.where(y == 0, 1, -1).astype(np.int8)[:, None]",
             ("tests/engine/test_perceptron_helpers.py", RANDOM, GOLDEN)),
    Mutation("tau-in-theta-units", "tau in units of theta_init (not of the average K(x, x))",
             "perceptron_lab/engine/perceptron.py", "tau_abs=float(settings.tau) * avg",
             "tau_abs=float(settings.tau) * theta_init", ("tests/engine/test_perceptron_helpers.py", GOLDEN)),
    Mutation("search-ties-last", "parameter search: the last of tied points wins",
             "perceptron_lab/run/evaluation.py", "if a is not None and a > best_acc + TIE_TOL_PP:",
             "if a is not None and a >= best_acc - TIE_TOL_PP:", ("tests/run/test_evaluation.py", GOLDEN, "tests/papers/kw2007/test_kw.py")),
    Mutation("nested-ties-last", "nested CV: the last of tied points wins",
             "perceptron_lab/run/evaluation.py", "if e is not None and e < best_err - TIE_TOL_PP:",
             "if e is not None and e <= best_err + TIE_TOL_PP:", ("tests/run/test_evaluation.py", GOLDEN, "tests/papers/kw2007/test_kw.py")),
    Mutation("nested-inner-fold-0-dropped", "nested CV: the choice ignores inner fold 0",
             "perceptron_lab/run/evaluation.py", 'inner = d[d["inner_fold"] >= 0]', 'inner = d[d["inner_fold"] > 0]',
             (GOLDEN, "tests/papers/kw2007/test_kw.py")),
    Mutation("stoptron-budget-off-by-one", "Stoptron: budget + 1 support vectors",
             "perceptron_lab/engine/budget.py", "insert = yf <= 0.0 and m < B", "insert = yf <= 0.0 and m <= B",
             ("tests/engine/test_budget.py", GOLDEN)),
    Mutation("alma-margin-sign", "primal ALMA: correction threshold (alpha - 1) gamma (sign flipped)",
             "perceptron_lab/engine/alma.py", "thr = (1.0 - alpha) * B * sp / sqk", "thr = (alpha - 1.0) * B * sp / sqk",
             ("tests/engine/test_alma.py", GOLDEN)),
    Mutation("fs-std-ddof0", "Freund & Schapire tables: standard deviation with ddof = 0",
             "perceptron_lab/papers/fs1999/tables.py", "ours_std=lambda s: s.std(ddof=1)",
             "ours_std=lambda s: s.std(ddof=0)", ("tests/papers/fs1999/test_tables.py", WRITERS)),
)


def _copy_tree(dst: Path, ref: str | None = None):
    """The files git tracks or would track (symlinks as links), and numba's cache files, with
    their times, so that the copy's cached compilations stay valid; with ``ref``, the tree of that
    commit instead (``git archive``; numba compiles it afresh)."""
    if ref:
        dst.mkdir(parents=True)
        archive = subprocess.run(["git", "archive", ref], cwd=ROOT, check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(dst)], input=archive, check=True)
        return
    out = subprocess.run(["git", "ls-files", "-z", "-co", "--exclude-standard"], cwd=ROOT, check=True,
                         capture_output=True).stdout.decode()
    names = [n for n in out.split("\0") if n]
    for n in names:
        src, d = ROOT / n, dst / n
        if not src.exists() and not src.is_symlink():
            continue                      # deleted in the working tree
        d.parent.mkdir(parents=True, exist_ok=True)
        if src.is_symlink():
            os.symlink(os.readlink(src), d)
        else:
            shutil.copy2(src, d)


def _pytest(work: Path, files, no_data: Path, timeout: int, first=True, deselect=()) -> tuple[int, str, float]:
    """The CI test command on ``files`` in the copy ``work`` (stopping at the first failure with
    ``first``), with no data sets: ``PLAB_DATA`` names a folder that does not exist, so the tests
    that need one are skipped (tests/conftest.py) and the packaged data sets are read."""
    # numba's cache in the copy: each mutant is new code, so a folder of its own (engine/numba_cache.py)
    env = {**os.environ, "PYTHONPATH": str(work), "PLAB_DATA": str(no_data),
           "NUMBA_CACHE_DIR": str(work / ".numba-cache")}
    cmd = [sys.executable, "-m", "pytest", "-q", "-rf", "-n", "0", "-p", "no:cacheprovider", "-W", "ignore",
           *(["-x"] if first else []), *[f"--deselect={t}" for t in deselect], *files]
    t0 = time.perf_counter()
    try:
        r = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True, timeout=timeout)
        return r.returncode, r.stdout + r.stderr, time.perf_counter() - t0
    except subprocess.TimeoutExpired as e:
        return -1, f"timed out after {timeout} s\n{e.stdout or ''}", time.perf_counter() - t0


def _failed(output: str) -> list[str]:
    return re.findall(r"^(?:FAILED|ERROR) (\S+)", output, flags=re.M)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="+", help="mutation ids to run (default: all)")
    ap.add_argument("--out", default=str(ROOT / "tests" / "tools" / "MUTATIONS.md"))
    ap.add_argument("--timeout", type=int, default=1200, help="seconds per test run")
    ap.add_argument("--ref", help="check the tree of this commit instead of the working tree (e.g. HEAD, to "
                                  "see what the tests caught before a change)")
    ap.add_argument("--tests", nargs="+", help="test files to run for every mutation (default: each one's own)")
    args = ap.parse_args(argv)
    muts = [m for m in MUTATIONS if not args.only or m.id in args.only]
    if args.tests:
        muts = [Mutation(m.id, m.what, m.path, m.old, m.new, tuple(args.tests), m.count) for m in muts]
    scratch = Path(tempfile.mkdtemp(prefix="plab-mutations-"))
    work, pristine, no_data = scratch / "work", scratch / "pristine", scratch / "no_data"   # never created
    try:
        _copy_tree(pristine, args.ref)
        _copy_tree(work, args.ref)
        files = sorted({f for m in muts for f in m.tests})
        rc, out, secs = _pytest(work, files, no_data, args.timeout, first=False)
        base_failed = set(_failed(out))
        print(f"baseline: {' '.join(files)}: rc {rc} in {secs:.0f} s"
              + (f"; failing already: {sorted(base_failed)}" if base_failed else ""), flush=True)
        if rc not in (0, 1):
            raise SystemExit(f"plab: error: the baseline run failed to run (rc {rc}):\n{out[-3000:]}")
        rows = []
        for m in muts:
            target = work / m.path
            text = (pristine / m.path).read_text()
            n = text.count(m.old)
            if n != m.count:
                rows.append((m, "NOT APPLIED", f"the snippet occurs {n} times, expected {m.count}", 0.0))
                print(f"{m.id}: not applied ({n} occurrences)", flush=True)
                continue
            target.write_text(text.replace(m.old, m.new))
            try:
                # -x stops at the first failure; the tests that fail unmutated are left out
                rc, out, secs = _pytest(work, m.tests, no_data, args.timeout,
                                        deselect=[t for t in base_failed if t.split("::")[0] in m.tests])
                failed = [t for t in _failed(out) if t not in base_failed]
                if rc == -1:
                    verdict, by = "TIMEOUT", ""
                elif failed:
                    verdict, by = "caught", failed[0]
                elif rc == 0:
                    verdict, by = "NOT CAUGHT", ""
                else:
                    verdict, by = "unclear", out.strip().splitlines()[-1] if out.strip() else f"rc {rc}"
            finally:
                shutil.copy2(pristine / m.path, target)          # the original text and time
            rows.append((m, verdict, by, secs))
            print(f"{m.id}: {verdict} {by} ({secs:.0f} s)", flush=True)
        lines = ["# Mutation check", "",
                 "Written by `python tests/tools/mutation_check.py` (see its docstring): each mutation is one "
                 "plausible bug applied to a copy of the tree"
                 + (f" at `{args.ref}`" if args.ref else "") + ", then the CI test command restricted to the "
                 + ("test files " + ", ".join(f"`{t}`" for t in args.tests) if args.tests
                    else "fast test files of its area")
                 + ", without data sets (`PLAB_DATA` names no folder).", "",
                 f"{sum(r[1] == 'caught' for r in rows)} of {len(rows)} mutations caught.", "",
                 "| mutation | what | file | verdict | first test that failed | seconds |",
                 "|---|---|---|---|---|---:|"]
        for m, verdict, by, secs in rows:
            what = m.what.replace("|", "\\|")   # a literal | in a Markdown table cell
            lines.append(f"| `{m.id}` | {what} | `{m.path}` | {verdict} | {f'`{by}`' if by else ''} | {secs:.0f} |")
        text = "\n".join(lines) + "\n"
        print(text)
        Path(args.out).write_text(text)
        return 0 if all(r[1] == "caught" for r in rows) else 1
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
