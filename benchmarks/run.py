from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

from perceptron_lab.errors import PlabError
from perceptron_lab.run.runtime import configure as configure_process

from . import __doc__ as PACKAGE_DOC
from . import coldstart, memory
from .cases import (
    case_alma,
    case_budget,
    case_evaluation,
    case_kernel,
    case_linear,
    case_nystroem,
    case_scaling,
    case_sparse,
    limit_run,
)
from .common import CASES, FULL, QUICK, ROOT, SVC_TIMEOUT, Sizes, select_cases
from .machine import gemm_gflops, machine
from .summary import write_summary
from .workers import worker_main


def main(argv=None):
    ap = argparse.ArgumentParser(description=PACKAGE_DOC.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", default=os.environ.get("PLAB_DATA"))
    ap.add_argument("--cases", default=None,
                    help="comma-separated case names or numbers: " + ", ".join(f"{c.number}/{c.name}" for c in CASES)
                    + " (default: all)")
    ap.add_argument("--quick", action="store_true",
                    help="small sizes (a smoke test of the whole pipeline, not a measurement)")
    ap.add_argument("--train-size", type=int, default=None,
                    help="case 5: first N MNIST examples (default: all)")
    ap.add_argument("--epochs", type=float, default=None, help="case 5: epochs (default 30)")
    ap.add_argument("--kernel-sizes", default=None, help="case 4: training-set sizes, e.g. 10000,20000")
    ap.add_argument("--scaling-epochs", type=float, default=None, help="case 6: epochs (default 30)")
    ap.add_argument("--svc-timeout", type=float, default=SVC_TIMEOUT,
                    help="case 4: stop an SVC fit after this many seconds and report it as timed out")
    ap.add_argument("--baseline", default=None,
                    help="cases 10 (coldstart) and 13 (memory): also measure this git revision (e.g. main), in the "
                    "same invocation")
    ap.add_argument("--summary-only", action="store_true",
                    help="run no case: rewrite summary.md from the case CSVs in --out and results/reproduce.json "
                    "(after a reproduction, so that its line is current)")
    ap.add_argument("--out", default=str(ROOT / "results" / "bench"))
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    # the children (plab run, the workers) run with the process settings of plab's commands
    configure_process()
    if args.worker is not None:
        worker_main(json.loads(args.worker))
        return

    cases = [] if args.summary_only else select_cases(args.cases)
    sz = QUICK if args.quick else FULL
    if args.kernel_sizes:
        sz = Sizes(**{**sz.__dict__, "kernel_sizes": tuple(int(x) for x in args.kernel_sizes.split(","))})
    if args.scaling_epochs is not None:
        sz = Sizes(**{**sz.__dict__, "scaling_epochs": args.scaling_epochs})
    limit_train = args.train_size if args.train_size is not None else sz.limit_train
    limit_epochs = args.epochs if args.epochs is not None else sz.limit_epochs
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    gemm_n = 1024 if args.quick else 4096
    # the machine each case's rows record; --summary-only measures nothing (the summary states the
    # machines of the rows it summarizes)
    mach = machine(gemm_gflops(gemm_n)) if cases else {}
    limit_row = None
    for case in cases:
        print(f"bench: case {case.number} ({case.name}) ...", file=sys.stderr, flush=True)
        t0 = time.perf_counter()
        if case.name == "linear":
            rows = case_linear(case, sz, args.data_dir)
        elif case.name == "averaged":
            rows = case_linear(case, sz, args.data_dir, averaged=True)
        elif case.name == "alma":
            rows = case_alma(case, sz, args.data_dir)
        elif case.name == "kernel":
            rows = case_kernel(case, sz, args.data_dir, args.svc_timeout)
        elif case.name == "budget":
            rows = case_budget(case, sz, args.data_dir, gemm_n)
        elif case.name == "evaluation":
            rows = case_evaluation(case, sz, args.data_dir, gemm_n)
        elif case.name == "sparse":
            rows = case_sparse(case, sz, args.data_dir)
        elif case.name == "coldstart":
            with tempfile.TemporaryDirectory() as runs:
                rows = coldstart.run(args.baseline, out / f"{case.file}.csv", Path(runs)).to_dict("records")
        elif case.name == "figures":
            rows = _figures_case(out)
        elif case.name == "nystroem":
            rows = case_nystroem(case, sz, args.data_dir)
        elif case.name == "memory":
            with tempfile.TemporaryDirectory() as runs:
                rows = memory.run(args.baseline, args.data_dir, Path(runs), *sz.memory_run)
        elif case.name == "limit":
            limit_row = limit_run(args.data_dir, limit_train, limit_epochs, sz.test, gemm_n)
            rows = [limit_row]
        else:
            rows = case_scaling(sz, args.data_dir, gemm_n, reuse=limit_row)
        rows = [{**r, **{k: v for k, v in mach.items() if k not in r}} for r in rows]
        pd.DataFrame(rows).to_csv(out / f"{case.file}.csv", index=False)
        print(f"bench: case {case.number} done in {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
    try:
        print(write_summary(out))
    except PlabError as exc:   # a damaged case CSV or reproduce.json: one line, nothing written
        print(f"plab: error: {exc}", file=sys.stderr)
        sys.exit(exc.exit_code)


def _figures_case(out: Path) -> list[dict]:
    """Case 10: the quickstart run (a child ``plab run``), then its figures timed in this process."""
    import subprocess

    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, "-m", "perceptron_lab.cli.main", "run", "-q", "--out", tmp], check=True,
                       stdout=subprocess.DEVNULL)
        return coldstart.figure_rows(Path(tmp))


if __name__ == "__main__":
    main()
