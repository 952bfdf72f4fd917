"""Where the parts of a run are computed: ``local`` (this machine; ``--jobs`` worker processes, see
:func:`perceptron_lab.experiment._run_pool`) or ``dask`` (an existing Dask distributed cluster).

With ``--executor dask --scheduler ADDRESS`` every part that is not finished yet becomes one task
on the cluster. A worker loads the dataset itself (``run_part(cfg, part, data_dir)``), so the data
folder given by ``--data-dir`` / ``PLAB_DATA`` is sent as an absolute path that must be valid on
every worker; without one, each worker uses its own ``PLAB_DATA`` or user cache. Tasks return
their part's CSV text and timings; this process writes each part atomically as its task completes
(the same ``finished`` callback as the local paths), so results are byte-identical to a local run,
and an interrupted run resumes with whatever was written.

Threads: a task runs numba and BLAS on one thread, like a local worker process; the parallelism
comes from the cluster's worker processes. The jitted engine holds the GIL, so several threads in
one worker process would mostly wait for each other: start workers with ``--nthreads 1`` and as
many processes (``--nworkers``) as cores.
"""

from __future__ import annotations

import os
import queue as queue_mod
import threading
import time
import uuid

from . import __version__
from .errors import PlabError

EXECUTORS = ("local", "dask")
#: Seconds to wait for the Dask scheduler to answer, and for it to have at least one worker.
DASK_CONNECT_SECONDS = 10.0
#: Seconds between checks for finished tasks and progress events.
DASK_POLL_SECONDS = 0.2
DASK_INSTALL_HINT = "pip install 'perceptron_lab[dask]' (in a clone: pip install -e '.[dask]')"


def check_executor(executor: str, scheduler: str | None, jobs: int = 1):
    """Fail before any work when the executor options do not fit together or dask is missing."""
    if executor not in EXECUTORS:
        raise PlabError(f"unknown executor {executor!r}; choose one of {', '.join(EXECUTORS)}")
    if executor == "local":
        if scheduler:
            raise PlabError("--scheduler applies to --executor dask only")
        return
    if not scheduler:
        raise PlabError("--executor dask needs --scheduler ADDRESS (where 'dask scheduler' listens, "
                        "e.g. tcp://head-node:8786)")
    if jobs > 1:
        raise PlabError("--jobs applies to --executor local; with --executor dask the cluster's "
                        "worker processes set the parallelism")
    try:
        import distributed  # noqa: F401
    except ImportError:
        raise PlabError(f"--executor dask needs the dask extra: {DASK_INSTALL_HINT}") from None


def _reason(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def connect_dask(scheduler: str, timeout: float = DASK_CONNECT_SECONDS):
    """A distributed Client for ``scheduler`` with at least one worker that runs this version."""
    import logging

    from distributed import Client

    # a failed connection is reported in one line below, not by distributed's own log messages
    log = logging.getLogger("distributed")
    level = log.level
    log.setLevel(logging.CRITICAL)
    try:
        client = Client(scheduler, timeout=timeout, set_as_default=False)
    except (OSError, TimeoutError, ValueError, TypeError) as exc:
        why = "" if "timed out" in _reason(exc).lower() else f" ({_reason(exc)})"
        raise PlabError(f"cannot reach the Dask scheduler at {scheduler} within {timeout:g} s{why}; "
                        "start it with 'dask scheduler' and check the address") from None
    finally:
        log.setLevel(level)
    try:
        try:
            client.wait_for_workers(1, timeout=timeout)
        except (TimeoutError, OSError):
            raise PlabError(f"the Dask scheduler at {scheduler} has no workers after {timeout:g} s; start "
                            f"them with 'dask worker {scheduler} --nworkers N --nthreads 1'") from None
        try:
            found = client.run(_worker_version)
        except Exception as exc:
            raise PlabError(f"Dask workers cannot run perceptron_lab ({_reason(exc)}); install "
                            f"perceptron_lab {__version__} in every worker's environment") from None
        other = sorted({v for v in found.values() if v != __version__})
        if other:
            raise PlabError(f"Dask workers run perceptron_lab {', '.join(other)}, this process "
                            f"{__version__}; install the same version everywhere")
    except BaseException:
        client.close()
        raise
    return client


def _worker_version():
    return __version__


_LIMITS: dict = {}
_LIMITS_LOCK = threading.Lock()


def _one_thread():
    """numba (per calling thread) and BLAS (per process, kept for the process's life) on one thread."""
    import numba

    numba.set_num_threads(1)
    with _LIMITS_LOCK:
        if "blas" not in _LIMITS:
            from .experiment import blas_one_thread

            _LIMITS["blas"] = blas_one_thread()


def _dask_task(cfg, part, data_dir, topic):
    """One part on a Dask worker: (key, CSV text, unit timings, training steps)."""
    from distributed import get_worker

    from .experiment import run_part

    _one_thread()
    worker = get_worker()
    steps = 0

    def unit_done(n):
        nonlocal steps
        steps += n
        worker.log_event(topic, [part.key, int(n)])

    text, tms = run_part(cfg, part, data_dir, unit_done=unit_done)
    return part.key, text, tms, steps


def run_dask(cfg, todo, data_dir, scheduler, finished, bar=None, timeout: float = DASK_CONNECT_SECONDS):
    """Run ``todo`` (parts) on the Dask cluster at ``scheduler``; ``finished(part, text, timings)``
    is called in this process, in completion order, as each task ends. ``bar`` (a tqdm bar of
    training steps) advances after each unit."""
    from distributed import KilledWorker

    if data_dir is not None:
        data_dir = os.path.abspath(os.path.expanduser(str(data_dir)))
    client = connect_dask(scheduler, timeout)
    topic = f"plab-progress-{uuid.uuid4().hex}"
    events: queue_mod.SimpleQueue = queue_mod.SimpleQueue()
    by_key = {p.key: p for p in todo}
    counted = {p.key: 0 for p in todo}
    done_keys: set = set()

    def drain():
        while True:
            try:
                key, n = events.get_nowait()
            except queue_mod.Empty:
                return
            if key not in done_keys:
                counted[key] += n
                if bar is not None:
                    bar.update(n)

    futures = []
    try:
        client.subscribe_topic(topic, lambda event: events.put(tuple(event[1])))
        token = uuid.uuid4().hex[:8]
        futures = [client.submit(_dask_task, cfg, p, data_dir, topic, key=f"plab-{p.key}-{token}", pure=False)
                   for p in todo]
        pending = list(futures)
        while pending:
            done = [f for f in pending if f.done()]
            drain()
            if not done:
                time.sleep(DASK_POLL_SECONDS)
                continue
            pending = [f for f in pending if all(f is not d for d in done)]
            for fut in done:
                try:
                    key, text, tms, steps = fut.result()
                except PlabError as exc:
                    err = PlabError(f"on a Dask worker: {exc}")
                    err.exit_code = exc.exit_code
                    raise err from None
                except KilledWorker as exc:
                    raise PlabError(f"Dask workers died while running {fut.key} ({_reason(exc)}); "
                                    "check the workers' memory and logs") from None
                finished(by_key[key], text, tms)
                done_keys.add(key)
                if bar is not None:
                    bar.update(steps - counted[key])
                fut.release()
        drain()
    finally:
        running = [f for f in futures if not f.done()]
        if running:
            client.cancel(running)
        try:
            client.unsubscribe_topic(topic)
        except Exception:  # pragma: no cover - the client may already be closing
            pass
        client.close()
