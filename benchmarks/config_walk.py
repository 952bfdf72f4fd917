"""How far the resolved config travels: the walk of ``cfg`` from ``run_experiment``.

Every Python call made while ``run_experiment`` runs the quickstart config is traced; a call
*touches the config* when one of its arguments is the :class:`ExperimentConfig` or one of its
sections (``cfg.dataset``, ``cfg.training``, ...). The walk is the sequence of the modules of
those calls, in call order, and:

* a *stay* is a run of consecutive calls in one module;
* a *climb back* is a stay in a module the walk has already left once: the config going back
  to code it had passed, which is what makes a reader hop between files to follow it;
* a *climb up* is a stay in a module of a higher layer than the stay before it (the layers of
  ``[tool.importlinter]`` in pyproject.toml, cli highest).

The config's own methods and properties (``cfg.to_dict()``, ``cfg.dataset.title``) are not
counted: they are where the config is, not where it travels.

Run ``python -m benchmarks.config_walk [CONFIG]``; it prints the counts and the walk, and with
``--csv PATH`` writes them.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import tempfile


def walk(config: str = "package:quickstart.yaml"):
    """The list of module names of the calls that take the config or a section of it."""
    try:
        from perceptron_lab.config.load import load_config
        from perceptron_lab.run.experiment import run_experiment
    except ImportError:  # the flat layout of earlier versions, for a before/after measurement
        from perceptron_lab.config import load_config
        from perceptron_lab.experiment import run_experiment

    cfg = load_config(config)
    watched = {id(cfg)} | {id(getattr(cfg, f.name)) for f in dataclasses.fields(cfg)
                           if dataclasses.is_dataclass(getattr(cfg, f.name))}
    calls = []

    def profile(frame, event, arg):
        if event != "call":
            return
        module = frame.f_globals.get("__name__", "")
        if not module.startswith("perceptron_lab"):
            return
        code = frame.f_code
        names = code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]
        if names and names[0] == "self" and id(frame.f_locals.get("self")) in watched:
            return   # the config's own accessors: where it is, not where it travels
        for name in names:
            if id(frame.f_locals.get(name)) in watched:
                calls.append((module, code.co_name))
                return

    with tempfile.TemporaryDirectory() as out:
        sys.setprofile(profile)
        try:
            run_experiment(cfg, out_dir=out, progress=False)
        finally:
            sys.setprofile(None)
    return calls


#: The layers, highest first (as in pyproject.toml's layers contract).
LAYERS = ["cli", "report", "papers", "studies", "estimators", "run", "model", "config", "datasets", "engine",
          "errors", "constants"]


def _layer(module: str) -> int:
    part = module.split(".")[1] if "." in module else module
    if part in ("papers", "studies"):
        return LAYERS.index("papers")
    if part in ("errors", "constants"):
        return LAYERS.index("errors")
    # the flat layout of earlier versions has no layers: every module counts as one
    return LAYERS.index(part) if part in LAYERS else -1


def summarize(calls):
    stays, seen, back, up = [], set(), 0, 0
    for module, _ in calls:
        if stays and stays[-1] == module:
            continue
        if module in seen:
            back += 1
        if stays and _layer(module) >= 0 and _layer(module) < _layer(stays[-1]):
            up += 1
        stays.append(module)
        seen.add(module)
    return {"calls": len(calls), "stays": len(stays), "modules": len(seen), "climbs_back": back,
            "climbs_up": up}, stays


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("config", nargs="?", default="package:quickstart.yaml")
    ap.add_argument("--csv", help="write the walk (one stay per row) to this file")
    args = ap.parse_args(argv)
    calls = walk(args.config)
    counts, stays = summarize(calls)
    print(" ".join(f"{k}={v}" for k, v in counts.items()))
    print(" -> ".join(m.removeprefix("perceptron_lab.") for m in stays))
    if args.csv:
        with open(args.csv, "w") as fh:
            fh.write("step,module\n" + "".join(f"{i},{m}\n" for i, m in enumerate(stays)))


if __name__ == "__main__":
    main()
