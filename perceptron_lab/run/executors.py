"""Where the parts of a run are computed: ``local`` (this machine; ``--jobs`` worker processes, see
:func:`run_pool`) or ``dask`` (an existing Dask distributed cluster).

With ``--executor dask --scheduler ADDRESS`` every part that is not finished yet becomes one task
on the cluster. A worker loads the dataset itself (``run_part(plan, part, data_dir)``), so the data
folder given by ``--data-dir`` / ``PLAB_DATA`` is sent as an absolute path that must be valid on
every worker; without one, each worker uses its own ``PLAB_DATA`` or user cache. Tasks return
their part's CSV text and timings; this process writes each part atomically as its task completes
(the same ``finished`` callback as the local paths), so results are byte-identical to a local run,
and an interrupted run resumes with whatever was written.

Workers prove what they compute with, by content, never by path or version string (a part's key
holds both, so a part is reused only when both match, :mod:`perceptron_lab.run.store`): each task
carries the fingerprints its part's key was made of (:func:`part_expectations`). Its worker checks
its own code fingerprint first (:func:`prove_code`; :func:`connect_dask` checks every worker's once
before any task), then reads the data inside :func:`~perceptron_lab.run.inputs.expecting_data`: a
worker's data cache answers only for data proved to have the plan's fingerprint, so a file edited
since is read again, and data that differs stops the run (exit status 3) before a part is computed
on it. The processes of ``--jobs`` do the same.

Threads: a task runs numba and BLAS on one thread, like a local worker process; the parallelism
comes from the cluster's worker processes. The jitted engine holds the GIL, so several threads in
one worker process would mostly wait for each other: start workers with ``--nthreads 1`` and as
many processes (``--nworkers``) as cores.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import queue as queue_mod
import threading
import time
import uuid

from perceptron_lab.constants import __version__
from perceptron_lab.errors import PlabError, UsageError, WorkerError

EXECUTORS = ("local", "dask")
#: Seconds to wait for the Dask scheduler to answer, and for it to have at least one worker.
DASK_CONNECT_SECONDS = 10.0
#: Seconds between checks for finished tasks and progress events.
DASK_POLL_SECONDS = 0.2
DASK_INSTALL_HINT = "pip install 'perceptron_lab[dask]' (in a clone: pip install -e '.[dask]')"
#: Extra seconds past the connect timeout before a handshake that never completes is given up.
DASK_GRACE_SECONDS = 5.0
#: Largest first frame accepted from a server as a Dask handshake (a real one is about 100 bytes).
DASK_HANDSHAKE_MAX_BYTES = 1 << 20
#: Seconds the client may stay disconnected from the scheduler during a run before it stops.
DASK_LOST_SECONDS = 10.0


def check_executor(executor: str, scheduler: str | None, jobs: int = 1):
    """Fail before any work (:class:`~perceptron_lab.errors.UsageError`, exit status 2) when the executor
    options do not fit together or the dask extra is missing."""
    if executor not in EXECUTORS:
        raise UsageError(f"unknown executor {executor!r}; choose one of {', '.join(EXECUTORS)}")
    if executor == "local":
        if scheduler:
            raise UsageError("--scheduler applies to --executor dask only")
        return
    if not scheduler:
        raise UsageError("--executor dask needs --scheduler ADDRESS (where 'dask scheduler' listens, "
                        "e.g. tcp://head-node:8786)")
    if jobs > 1:
        raise UsageError("--jobs applies to --executor local; with --executor dask the cluster's "
                        "worker processes set the parallelism")
    try:
        import distributed  # noqa: F401
    except ImportError:
        raise UsageError(f"--executor dask needs the dask extra: {DASK_INSTALL_HINT}") from None


def _reason(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def connect_dask(scheduler: str, timeout: float = DASK_CONNECT_SECONDS):
    """A distributed Client for ``scheduler`` with at least one worker, every worker running this
    version and this code (:func:`_check_worker_code`)."""

    from distributed import Client

    # a failed connection is reported in one line below, not by distributed's own log messages
    saved = _quiet_distributed_logs()
    not_dask = (f"{scheduler} does not answer as a Dask scheduler within {timeout:g} s; check the address "
                "(start one with 'dask scheduler')")
    try:
        _probe(scheduler, timeout)
        client = _with_deadline(lambda: Client(scheduler, timeout=timeout, set_as_default=False),
                                timeout + DASK_GRACE_SECONDS, not_dask)
    except (OSError, TimeoutError, ValueError, TypeError) as exc:
        why = "" if "timed out" in _reason(exc).lower() else f" ({_reason(exc)})"
        raise WorkerError(f"cannot reach the Dask scheduler at {scheduler} within {timeout:g} s{why}; "
                        "start it with 'dask scheduler' and check the address") from None
    except (MemoryError, OverflowError, EOFError) as exc:  # garbage read as a frame length
        raise WorkerError(f"{not_dask} ({type(exc).__name__} while reading its reply)") from None
    except PlabError:
        raise
    except Exception as exc:  # a protocol error of another kind: still one line
        raise WorkerError(f"{not_dask} ({_reason(exc)})") from None
    finally:
        _restore_logs(saved)
    try:
        try:
            client.wait_for_workers(1, timeout=timeout)
        except (TimeoutError, OSError):
            raise WorkerError(f"the Dask scheduler at {scheduler} has no workers after {timeout:g} s; start "
                            f"them with 'dask worker {scheduler} --nworkers N --nthreads 1'") from None
        _check_worker_code(client)
    except BaseException:
        client.close()
        raise
    return client


def _probe(scheduler: str, timeout: float) -> None:
    """Check that ``scheduler`` (tcp://) talks like a Dask scheduler before distributed does: a
    Dask server sends its handshake as soon as a connection opens, a small frame whose first 8
    bytes give its length. A server that stays silent (HTTP, ...) or sends something else (an SSH
    banner, read as a length of exabytes) is refused in one line, and distributed never reads it."""
    import socket
    import struct
    from urllib.parse import urlsplit

    u = urlsplit(scheduler if "://" in scheduler else f"tcp://{scheduler}")
    if u.scheme not in ("tcp", "") or not u.hostname or not u.port:
        return  # tls://, inproc:// ...: left to distributed
    with socket.create_connection((u.hostname, u.port), timeout=timeout) as sock:
        head = b""
        try:
            while len(head) < 8:
                chunk = sock.recv(8 - len(head))
                if not chunk:
                    break
                head += chunk
        except (TimeoutError, socket.timeout):
            pass
    if len(head) < 8:
        raise WorkerError(f"{scheduler} does not answer as a Dask scheduler within {timeout:g} s (it sent "
                        f"{len(head)} bytes of the handshake); check the address (start one with 'dask scheduler')")
    (n,) = struct.unpack("Q", head)
    if n > DASK_HANDSHAKE_MAX_BYTES:
        raise WorkerError(f"{scheduler} is not a Dask scheduler: its first bytes {head!r} are no Dask handshake; "
                        "check the address")


def _with_deadline(fn, seconds: float, message: str):
    """``fn()`` in a daemon thread; a PlabError(``message``) if it has not returned in ``seconds``
    (distributed can wait for ever on a server that accepts but never completes the handshake)."""
    box: dict = {}

    def target():
        try:
            box["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            box["error"] = exc

    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(seconds)
    if t.is_alive():
        raise WorkerError(message)
    if "error" in box:
        raise box["error"]
    return box["value"]


#: What to do when a worker's code is not this process's.
SAME_CODE_FIX = ("install the same code on every worker (the same commit and local edits, or the same wheel) and "
                 "restart workers started before an edit or upgrade, then run the same command again (finished "
                 "parts are kept)")


def _check_worker_code(client) -> None:
    """:class:`~perceptron_lab.errors.WorkerError` unless every worker of ``client`` has this
    process's code fingerprint (:func:`perceptron_lab.run.store.code_fingerprint`, the version and a
    hash of the code): another version is named as such; the same version string is not the same
    code (an edit, a checkout of another commit)."""
    from perceptron_lab.run.store import code_fingerprint

    mine = code_fingerprint()
    try:
        found = client.run(code_fingerprint)
    except Exception as exc:
        raise WorkerError(f"Dask workers cannot run perceptron_lab ({_reason(exc)}); install perceptron_lab "
                          f"{__version__} in every worker's environment") from None
    versions = sorted({c.split("+", 1)[0] for c in found.values()} - {__version__})
    if versions:
        raise WorkerError(f"Dask workers run perceptron_lab {', '.join(versions)}, this process "
                          f"{__version__}; install the same version everywhere")
    other = sorted({c for c in found.values() if c != mine})
    if other:
        n = sum(c != mine for c in found.values())
        raise WorkerError(f"{n} of {len(found)} Dask worker(s) run other perceptron_lab code under the same version "
                          f"{__version__} (code fingerprint {', '.join(other)}, this process {mine}); {SAME_CODE_FIX}")


def prove_code(expected: str) -> str:
    """In a worker, before it computes a part: its code fingerprint, when it is ``expected`` (the one
    the part's key carries); :class:`~perceptron_lab.errors.WorkerError` (exit status 5) otherwise."""
    from perceptron_lab.run.store import code_fingerprint

    mine = code_fingerprint()
    if mine != expected:
        raise WorkerError(f"this worker runs other perceptron_lab code under the same version {__version__} (code "
                          f"fingerprint {mine}, plab run's {expected}); {SAME_CODE_FIX}")
    return mine


def part_expectations(plan, parts, data_dir) -> dict:
    """``Part.key`` -> (the data fingerprint, the code fingerprint) that part's key was made of
    (:func:`perceptron_lab.run.plan.part_keys`): the plan's data fingerprint, or for a part whose grid
    values set the dataset the fingerprint of its own point's data (read here, as the plan read it,
    from this process's cache), and this process's code fingerprint. A worker computes the part only
    with both (:func:`prove_code`, :func:`~perceptron_lab.run.inputs.expecting_data`)."""
    from perceptron_lab.run.inputs import load_data
    from perceptron_lab.run.store import code_fingerprint, data_fingerprint

    code = code_fingerprint()
    by_point: dict = {}
    out = {}
    for p in parts:
        if any(k.startswith("dataset.") for k in p.grid_values):
            if p.grid_point not in by_point:
                by_point[p.grid_point] = data_fingerprint(load_data(plan.point(p), data_dir))
            out[p.key] = (by_point[p.grid_point], code)
        else:
            out[p.key] = (plan.fingerprint, code)
    return out


_LIMITS: dict = {}
_LIMITS_LOCK = threading.Lock()


def _one_thread():
    """numba (per calling thread) and BLAS (per process, kept for the process's life) on one thread."""
    import numba

    numba.set_num_threads(1)
    with _LIMITS_LOCK:
        if "blas" not in _LIMITS:
            from perceptron_lab.engine.threads import pin_blas_one_thread

            _LIMITS["blas"] = pin_blas_one_thread()


def _dask_task(plan, part, data_dir, topic, expect):
    """One part on a Dask worker: (key, CSV text, unit timings, training steps, the worker's code
    fingerprint), computed only with the code and on the data whose fingerprints ``expect`` gives
    (:func:`part_expectations`)."""
    from distributed import get_worker

    from perceptron_lab.run.inputs import expecting_data
    from perceptron_lab.run.units import run_part

    data_print, code_print = expect
    code = prove_code(code_print)
    _one_thread()
    worker = get_worker()
    steps = 0

    def unit_done(n):
        nonlocal steps
        steps += n
        worker.log_event(topic, [part.key, int(n)])

    with expecting_data(data_print):
        text, tms = run_part(plan, part, data_dir, unit_done=unit_done)
    return part.key, text, tms, steps, code


def worker_plan(plan):
    """``plan`` with every config in it as a worker in another folder must see it
    (:func:`worker_config`)."""
    import dataclasses

    return dataclasses.replace(plan, config=worker_config(plan.config),
                               points={g: worker_config(c) for g, c in plan.points.items()})


def _dask_warm_up(plan, part, tiny):
    """On a Dask worker: compile (or load from numba's cache) the jitted code ``part`` runs, on the
    slice ``tiny`` of its data (:func:`~perceptron_lab.run.units.warm_up`); returns the worker process's
    id and the seconds it took. Nothing it computes is kept."""
    from perceptron_lab.run.units import warm_up

    _one_thread()
    t0 = time.perf_counter()
    warm_up(plan, part, tiny)
    return os.getpid(), time.perf_counter() - t0


def _warm_up_slice(plan, part, ds):
    """The rows of ``ds`` that :func:`~perceptron_lab.run.units.warm_up` reads (it slices them again,
    to the same rows): sent to the workers instead of the dataset."""
    from perceptron_lab.datasets.base import Dataset
    from perceptron_lab.run.units import WARM_UP_ROWS

    k = min(len(ds.y_train), max(WARM_UP_ROWS, 2 * (plan.spec(part).fold_train_size or 0)))
    kt = None if ds.X_test is None else min(len(ds.y_test), WARM_UP_ROWS)
    return Dataset(ds.name, ds.X_train[:k], ds.y_train[:k], None if kt is None else ds.X_test[:kt],
                   None if kt is None else ds.y_test[:kt], ds.classes, ds.meta)


def compile_on_dask(plan, firsts, scheduler, step=None, timeout: float = DASK_CONNECT_SECONDS) -> int:
    """The compile step of a Dask run: every worker of the cluster at ``scheduler`` compiles the
    jitted code of each part kind, before any part is submitted, so that the parts' training times
    and the progress bar's rate measure training alone (as the local run's compile step does).

    ``firsts`` lists ``(part, dataset)``, the first part of each kind with its data; the workers get
    the slice of rows that :func:`~perceptron_lab.run.units.warm_up` reads, not the dataset. One task
    per (worker, kind), pinned to that worker: numba compiles once per process and keeps the code
    for the process's later tasks. ``step`` (a tqdm bar) counts the tasks done. Workers that join
    after this step compile on their first part. A failed warm-up is not reported here: the same
    failure stops the run itself, with its own message. Returns the number of workers."""
    plan = worker_plan(plan)
    saved = _quiet_distributed_logs()
    try:
        client = connect_dask(scheduler, timeout)
        try:
            workers = sorted(client.scheduler_info()["workers"])
            token = uuid.uuid4().hex[:8]
            futures = []
            shared_plan = client.scatter(plan, broadcast=True, hash=False) if firsts and workers else None
            for i, (part, ds) in enumerate(firsts):
                tiny = _warm_up_slice(plan, part, ds)
                for w in workers:
                    futures.append(client.submit(_dask_warm_up, shared_plan, part, tiny, workers=[w], allow_other_workers=False,
                                                 pure=False, key=f"plab-compile-{i}-{w}-{token}"))
            if step is not None:
                step.reset(total=len(futures))
            pending, lost_since = list(futures), None
            while pending:
                done = [f for f in pending if f.done()]
                if done:
                    pending = [f for f in pending if all(f is not d for d in done)]
                    for f in done:
                        f.release()
                    if step is not None:
                        step.update(len(done))
                    continue
                if client.status != "running":
                    lost_since = lost_since or time.monotonic()
                    if time.monotonic() - lost_since > DASK_LOST_SECONDS:
                        raise WorkerError(_lost(scheduler, f"no connection for {DASK_LOST_SECONDS:g} s"))
                time.sleep(DASK_POLL_SECONDS)
            return len(workers)
        finally:
            try:
                _with_deadline(lambda: client.close(timeout=DASK_GRACE_SECONDS), 2 * DASK_GRACE_SECONDS, "")
            except Exception:  # noqa: BLE001 - closing a client whose scheduler died
                pass
    finally:
        _restore_logs(saved)


def worker_config(cfg):
    """``cfg`` as a worker in another folder must see it: its source file named by an absolute
    path, so that a relative ``dataset.path`` / ``dataset.test_path`` (relative to the config's
    folder, :func:`perceptron_lab.config.checks.config_dir`) is read from the same file as here.
    Packaged configs and configs built from a mapping are returned as they are."""
    import dataclasses

    from perceptron_lab.constants import PACKAGE_CONFIG_PREFIX

    src = cfg.source
    if not src or src.startswith((PACKAGE_CONFIG_PREFIX, "<")) or os.path.isabs(src):
        return cfg
    return dataclasses.replace(cfg, source=os.path.abspath(src))


#: What to do when a worker cannot read data this process has just read.
WORKER_DATA_FIX = ("this process reads it, so the worker sees another file system: make the file readable at "
                   "the same absolute path on every worker (a shared folder; for registry datasets point "
                   "--data-dir / PLAB_DATA at one), or run with --executor local")


def _worker_error(exc: PlabError) -> PlabError:
    """A worker's own error, in one line that says it happened there, with its exit status. A data
    file a worker cannot read, which this process read before dispatching, is a matter of where
    the worker runs, not of the config: the fix says so (:data:`WORKER_DATA_FIX`)."""
    from perceptron_lab.errors import DatasetError
    from perceptron_lab.run.inputs import DataChangedError

    text = str(exc)
    if isinstance(exc, DatasetError) and not isinstance(exc, DataChangedError) and ". Fix: " in text:
        text = text.split(". Fix: ", 1)[0] + f" on the worker. Fix: {WORKER_DATA_FIX}."
    err = PlabError(f"on a Dask worker: {text}")
    err.exit_code = exc.exit_code
    return err


def run_dask(plan, todo, data_dir, scheduler, finished, bar=None, timeout: float = DASK_CONNECT_SECONDS):
    """Run ``todo`` (parts) on the Dask cluster at ``scheduler``; ``finished(part, text, timings)``
    is called in this process, in completion order, as each task ends. ``bar`` (a tqdm bar of
    training steps) advances after each unit. Paths are sent absolute (:func:`worker_config`); each
    task carries the fingerprints its part's key was made of (:func:`part_expectations`)."""
    expects = part_expectations(plan, todo, data_dir)
    if data_dir is not None:
        data_dir = os.path.abspath(os.path.expanduser(str(data_dir)))
    plan = worker_plan(plan)
    # failures are reported in one line by this function, not by distributed's own log records
    # (a lost scheduler makes its client log a traceback per reconnection attempt); after a
    # failure the logs stay quiet, as the client's background reconnection may still be winding down
    saved = _quiet_distributed_logs()
    _run_dask(plan, todo, data_dir, scheduler, finished, bar, timeout, expects)
    _restore_logs(saved)


def _restore_logs(saved: list) -> None:
    for log, level in saved:
        log.setLevel(level)


def _quiet_distributed_logs() -> list:
    """Silence distributed's loggers (each has its own level); returns (logger, level) to restore."""
    names = ["distributed"] + [n for n in logging.root.manager.loggerDict if n.startswith("distributed.")]
    saved = []
    for n in names:
        log = logging.getLogger(n)
        saved.append((log, log.level))
        log.setLevel(logging.CRITICAL + 1)
    return saved


def _run_dask(plan, todo, data_dir, scheduler, finished, bar, timeout, expects):
    from distributed import KilledWorker

    from perceptron_lab.run.store import code_fingerprint

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
        # the plan goes to the cluster once; each part's task refers to it (its pickle grows with the grid)
        shared_plan = client.scatter(plan, broadcast=True, hash=False)
        futures = [client.submit(_dask_task, shared_plan, p, data_dir, topic, expects[p.key],
                                 key=f"plab-{p.key}-{token}", pure=False) for p in todo]
        pending = list(futures)
        lost_since = None
        while pending:
            done = [f for f in pending if f.done()]
            drain()
            if not done:
                if client.status != "running" or getattr(client.scheduler_comm, "comm", None) is None \
                        or client.scheduler_comm.comm.closed():
                    lost_since = lost_since or time.monotonic()
                    if time.monotonic() - lost_since > DASK_LOST_SECONDS:
                        raise WorkerError(_lost(scheduler, f"no connection for {DASK_LOST_SECONDS:g} s"))
                else:
                    lost_since = None
                time.sleep(DASK_POLL_SECONDS)
                continue
            pending = [f for f in pending if all(f is not d for d in done)]
            for fut in done:
                try:
                    key, text, tms, steps, code = fut.result()
                except PlabError as exc:   # a worker's own error keeps its exit status (data 3, numerics 4)
                    raise _worker_error(exc) from None
                except KilledWorker as exc:
                    raise WorkerError(f"Dask workers died while running {fut.key} ({_reason(exc)}); "
                                    "check the workers' memory and logs") from None
                except BaseException as exc:  # the scheduler went away, the task was cancelled ...
                    if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                        raise
                    raise WorkerError(_lost(scheduler, _reason(exc))) from None
                if code != code_fingerprint():   # never write a part under a key its worker's code did not make
                    raise WorkerError(f"a Dask worker returned {key} computed by other perceptron_lab code (code "
                                      f"fingerprint {code}, this process {code_fingerprint()}); {SAME_CODE_FIX}")
                finished(by_key[key], text, tms)
                done_keys.add(key)
                if bar is not None:
                    bar.update(steps - counted[key])
                fut.release()
        drain()
    finally:
        try:
            running = [f for f in futures if not f.done()]
            if running:
                client.cancel(running)
            client.unsubscribe_topic(topic)
        except Exception:  # the scheduler may be gone already
            pass
        try:
            _with_deadline(lambda: client.close(timeout=DASK_GRACE_SECONDS), 2 * DASK_GRACE_SECONDS, "")
        except Exception:  # noqa: BLE001 - closing a client whose scheduler died
            pass


def _lost(scheduler: str, why: str) -> str:
    return (f"lost the Dask scheduler at {scheduler} during the run ({why}); the parts finished so far are "
            "kept: start the scheduler again and run the same command to resume")


# ----------------------------------------------------------------------------- process pool

_WORKER: dict = {}
#: Seconds the workers of a pool may take to start.
WORKER_START_SECONDS = 120.0


def _die_with_parent(parent_pid: int) -> None:
    """Linux: ask the kernel to SIGKILL this process when its parent dies, however it dies
    (SIGKILL included), so that no worker outlives a killed ``plab run``; if the parent is already
    gone, exit now."""
    if sys.platform.startswith("linux"):
        import ctypes
        import signal

        try:
            ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL))  # 1 = PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent_pid:
        os._exit(1)


def _worker_init(queue, parent_pid=None, ready=None):
    """Worker process setup: die with the parent, one thread for BLAS and numba (the pool supplies
    the parallelism)."""
    if parent_pid is not None:
        _die_with_parent(parent_pid)
    from perceptron_lab.engine.threads import pin_blas_one_thread

    _WORKER["limits"] = pin_blas_one_thread()
    import numba

    numba.set_num_threads(1)
    _WORKER.update(queue=queue, ready=ready)


def _worker_ready():
    _WORKER["ready"].wait(WORKER_START_SECONDS)
    return os.getpid()


#: Plans a worker keeps loaded (the latest used): the configs whose parts it may be running in
#: turn (``make reproduce`` runs up to ``jobs + 1`` side by side).
PLANS_KEPT = 4


def _worker_plan(path: str, tag: str):
    """The plan of run ``tag``, read from ``path`` (:meth:`WorkerPool.run` pickles it there once)
    on this worker's first part of the run, then kept: a part's task carries the file's name, not
    the plan, whose pickle grows with the grid while a part of a large grid may compute in far less
    time than pickling it takes."""
    import pickle
    from collections import OrderedDict

    plans = _WORKER.setdefault("plans", OrderedDict())
    plan = plans.get(tag)
    if plan is None:
        with open(path, "rb") as fh:
            plan = pickle.load(fh)
        plans[tag] = plan
        while len(plans) > PLANS_KEPT:
            plans.popitem(last=False)
    plans.move_to_end(tag)
    return plan


def _worker_run(plan_path, data_dir, tag, part, expect=None):
    """One part in a worker: (key, CSV text, unit timings, training steps). The plan is read from
    ``plan_path`` (:func:`_worker_plan`). The steps also go to the parent's queue as ``(tag,
    steps)`` after each unit; the peak memory the timings report is this part's (a worker may run
    parts of several configs in turn). Computed only with the code and on the data whose
    fingerprints ``expect`` gives (:func:`part_expectations`), as a Dask task is (None: unchecked,
    for a caller that has proved them)."""
    from perceptron_lab.run.inputs import expecting_data
    from perceptron_lab.run.runtime import reset_peak_rss
    from perceptron_lab.run.units import run_part

    if expect is not None:
        prove_code(expect[1])
    plan = _worker_plan(plan_path, tag)
    q = _WORKER["queue"]
    steps = 0

    def unit_done(n):
        nonlocal steps
        steps += n
        q.put((tag, n))

    if _WORKER.get("config") != plan.name:    # a part of another config: free the last one's data
        from perceptron_lab.engine import columns
        from perceptron_lab.run.inputs import keep_only_dataset

        columns.release()
        keep_only_dataset(plan.point(part).dataset.name)  # unless this config reads the same dataset
        _WORKER["config"] = plan.name
    reset_peak_rss()
    with expecting_data(None if expect is None else expect[0]):
        text, tms = run_part(plan, part, data_dir, unit_done=unit_done)
    return part.key, text, tms, steps


def _pickle_plan(plan) -> str:
    """``plan`` pickled once into a new private temporary file, for the workers to read
    (:func:`_worker_plan`); returns its path. The caller removes it."""
    import pickle
    import tempfile

    fd, path = tempfile.mkstemp(prefix="plab-plan-", suffix=".pickle")
    try:
        with os.fdopen(fd, "wb") as fh:
            pickle.dump(plan, fh, protocol=pickle.HIGHEST_PROTOCOL)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(path)
        raise
    return path


class WorkerPool:
    """``jobs`` spawned worker processes (one BLAS and numba thread each) that run the parts of
    any number of configs, from one thread or several: ``make reproduce`` keeps one pool for all its
    configs, so that a config's last parts run beside the next config's first ones and no worker
    is started twice. Use as a context manager; leaving it on an exception cancels what has not
    started and stops the workers."""

    def __init__(self, jobs: int):
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor

        ctx = mp.get_context("spawn")
        self._queue = ctx.Queue()
        ready = ctx.Barrier(jobs)
        self._ex = ProcessPoolExecutor(max_workers=jobs, mp_context=ctx, initializer=_worker_init,
                                       initargs=(self._queue, os.getpid(), ready))
        self._bars: dict = {}   # tag -> [bar, steps shown]
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._router = threading.Thread(target=self._route, name="plab-progress", daemon=True)
        self._router.start()
        # Start every worker now, from this thread: the executor starts them lazily from the thread
        # that submits, and a worker dies with the thread that started it (PR_SET_PDEATHSIG follows
        # the starting thread), which may be a config's thread that ends long before the pool. Each
        # of these tasks waits for all the others, so that each one needs a worker of its own.
        from concurrent.futures import TimeoutError as FutureTimeout
        from concurrent.futures.process import BrokenProcessPool

        try:
            for fut in [self._ex.submit(_worker_ready) for _ in range(jobs)]:
                # a worker killed while it starts is not always reported by the executor (its
                # sentinel may not be watched yet), and its peers wait for it at the barrier: look
                # at the workers themselves while waiting
                while True:
                    try:
                        fut.result(timeout=0.25)
                        break
                    except FutureTimeout:
                        if self._a_worker_died():
                            raise BrokenProcessPool("a worker exited") from None
        except (BrokenProcessPool, threading.BrokenBarrierError):
            self.terminate()
            raise WorkerError("a worker process died while the pool of --jobs workers started (out of memory? "
                              "killed? see the system log); nothing was computed: run the same command again, "
                              "with fewer --jobs if memory ran out") from None

    def _a_worker_died(self) -> bool:
        """Whether a worker process of the pool has exited."""
        procs = list((getattr(self._ex, "_processes", None) or {}).values())
        return any(p.exitcode is not None for p in procs)

    def _route(self):
        """Hand the workers' step counts to the bar of the run they belong to."""
        while not self._stop.is_set():
            try:
                tag, n = self._queue.get(timeout=0.25)
            except queue_mod.Empty:
                continue
            except (EOFError, OSError, ValueError):  # the queue closed under us at shutdown
                return
            with self._lock:
                entry = self._bars.get(tag)
                if entry is not None and entry[0] is not None:
                    entry[0].update(n)
                    entry[1] += n

    def run(self, plan, todo, data_dir, finished, bar=None) -> None:
        """Run ``todo`` (a config's parts) in the pool; ``finished(part, text, timings)`` is called in
        the calling thread, in completion order, as each part ends."""
        from concurrent.futures import as_completed
        from concurrent.futures.process import BrokenProcessPool

        tag = uuid.uuid4().hex
        by_key = {p.key: p for p in todo}
        total = 0
        with self._lock:
            self._bars[tag] = [bar, 0]
        pending: set = set()
        plan_path = None
        try:
            expects = part_expectations(plan, todo, data_dir)
            plan_path = _pickle_plan(plan)
            pending = {self._ex.submit(_worker_run, plan_path, data_dir, tag, p, expects[p.key]) for p in todo}
            # as_completed watches every future once; waiting on the whole set after each part
            # would cost time quadratic in the number of parts
            for fut in as_completed(pending):   # watches its own copy of the set
                pending.discard(fut)
                try:
                    key, text, tms, steps = fut.result()
                except BrokenProcessPool:
                    raise WorkerError("a worker process died while computing a part (out of memory? "
                                    "see the system log); the finished parts are kept: run the same "
                                    "command again to resume, with fewer --jobs if memory ran out") from None
                total += steps
                finished(by_key[key], text, tms)
        except BaseException:
            for fut in pending:
                fut.cancel()
            raise
        finally:
            with self._lock:
                _, shown = self._bars.pop(tag)
            if plan_path is not None:
                with contextlib.suppress(OSError):
                    os.unlink(plan_path)
        if bar is not None and total > shown:   # counts still in the queue: the bar ends complete
            bar.update(total - shown)

    def submit(self, fn, *args):
        """Run ``fn(*args)`` (a picklable function) in a worker, queued with the parts; returns its future."""
        return self._ex.submit(fn, *args)

    def close(self, cancel: bool = False) -> None:
        self._ex.shutdown(wait=not cancel, cancel_futures=cancel)
        self._stop.set()

    def terminate(self) -> None:
        """Stop now: cancel what has not started and kill the workers (the parts they were
        computing are lost; the finished ones are written). Runs waiting on them fail."""
        procs = list((getattr(self._ex, "_processes", None) or {}).values())
        self._ex.shutdown(wait=False, cancel_futures=True)
        for proc in procs:
            proc.terminate()
        self._stop.set()
        # wait for the executor's manager thread to see the workers gone: at exit Python 3.11 wakes
        # that thread through a pipe which its own shutdown may be closing at the same moment, and
        # prints "Exception ignored ... BrokenPipeError" with a traceback
        manager = getattr(self._ex, "_executor_manager_thread", None)
        if manager is not None:
            manager.join(timeout=10)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.close()
        else:   # interrupted or failed: the running parts are lost either way, stop the workers now
            self.terminate()
        return False


def run_pool(plan, todo, data_dir, jobs, finished, bar):
    """Run parts in ``jobs`` spawned worker processes (a :class:`WorkerPool` of their own);
    ``finished(part, text, timings)`` is called in this process, in completion order, as each part
    ends."""
    with WorkerPool(min(jobs, len(todo))) as pool:
        pool.run(plan, todo, data_dir, finished, bar)
