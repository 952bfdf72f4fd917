"""Kernel columns shared between the runs of a process (perceptron_lab.engine.columns): every run's
log is the one it records alone, field by field, while fewer columns are computed.

The data are like MNIST's: non-negative integer pixels up to 255 with most at 0, trained in
float32 with the degree-4 polynomial kernel, so that the float32 inner products are rounded (they
exceed 2^24) -- the case where the order of the sums could matter.
"""

from __future__ import annotations

import dataclasses
import hashlib
import sys

import numpy as np
import pytest

import perceptron_lab.engine.perceptron as eng
from perceptron_lab.engine import columns
from perceptron_lab.engine.alma import AlmaParams, train_alma
from perceptron_lab.engine.perceptron import PerceptronParams, label_matrix, train
from perceptron_lab.engine.kernels import Kernel
from pages import vm_flags


@pytest.fixture(autouse=True)
def fresh_store():
    columns.set_enabled(True)
    columns.release()
    yield
    columns.set_enabled(True)
    columns.release()


def pixels(n=700, f=196, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 256, size=(n, f)) * (rng.random((n, f)) < 0.25)
    W = rng.normal(size=(f, 4))
    y = np.argmax(X @ W + 200.0 * rng.normal(size=(n, 4)), axis=1)
    return X.astype(np.float64), label_matrix(y, 4)


KERNEL = Kernel("poly", degree=4, scale=1.0).range_safe(pixels()[0], np.float32)


def log_fields(log):
    return {f.name: getattr(log, f.name) for f in dataclasses.fields(log) if f.name not in ("seconds",)}


def assert_same_log(a, b):
    fa, fb = log_fields(a), log_fields(b)
    for k in fa:
        x, y = fa[k], fb[k]
        if isinstance(x, np.ndarray):
            assert x.dtype == y.dtype and np.array_equal(x, y, equal_nan=True), k
        elif k != "info":
            assert x == y, k


def count_columns(monkeypatch):
    seen = {"rows": 0}
    inner = eng._columns

    def counting(kernel, Xd, sq, ex, *a, **kw):
        seen["rows"] += len(ex)
        return inner(kernel, Xd, sq, ex, *a, **kw)

    monkeypatch.setattr(eng, "_columns", counting)
    return seen


def runs(X, Y, cache_limit_gb=8.0, taus=(0.0, 2.0e9), alma=True, **kw):
    """Three permutations x the margins ``taus`` of the perceptron, then ALMA_2, on the same examples."""
    out = []
    for seed in (1, 2, 3):
        order = np.random.default_rng(seed).permutation(len(X))
        for tau in taus:
            out.append(train(X, Y, KERNEL, PerceptronParams(tau_abs=tau), order, 3, (1, 2, 3), chunk_size=64,
                             dtype=np.float32, flush_at=32, cache_limit_gb=cache_limit_gb, **kw))
    if not alma:
        return out
    order = np.random.default_rng(4).permutation(len(X))
    out.append(train_alma(X, Y, KERNEL, AlmaParams(alpha=0.9), order, 2, (1, 2), chunk_size=64, dtype=np.float32,
                          form="dual", flush_at=32, cache_limit_gb=cache_limit_gb))
    return out


def alone(X, Y, **kw):
    columns.set_enabled(False)
    try:
        return runs(X, Y, **kw)
    finally:
        columns.set_enabled(True)


def test_runs_sharing_columns_record_the_logs_they_record_alone(monkeypatch):
    X, Y = pixels()
    ref = alone(X, Y)
    seen = count_columns(monkeypatch)
    got = runs(X, Y)
    for a, b in zip(got, ref):
        assert a.n_updates > 50
        assert_same_log(a, b)
    own = sum(len(np.unique(r.upd_ex)) for r in ref[:-1])   # what the perceptron runs compute alone
    assert seen["rows"] < 0.6 * own                           # most columns came from the store


def test_a_store_too_small_for_every_run_drops_the_columns_a_run_does_not_use(monkeypatch):
    X, Y = pixels()
    kw = dict(taus=(0.0,), alma=False)
    first = alone(X, Y, **kw)
    distinct = max(len(np.unique(r.upd_ex)) for r in first)
    union = len(np.unique(np.concatenate([r.upd_ex for r in first])))
    assert union > distinct + 20
    limit = (distinct + 10.5) * len(X) * 4 / 1e9    # room for one run's columns, not for all runs'
    ref = alone(X, Y, cache_limit_gb=limit, **kw)
    calls = record_calls(monkeypatch)
    for a, b in zip(runs(X, Y, cache_limit_gb=limit, **kw), ref):
        assert_same_log(a, b)
    assert any(after < before for before, after, _ in calls)   # the store dropped columns


def test_a_run_keeps_at_most_keep_gb_of_other_runs_columns(monkeypatch):
    X, Y = pixels()
    ref = alone(X, Y)
    keep_rows = 50
    monkeypatch.setattr(columns, "KEEP_GB", keep_rows * len(X) * 4 / 1e9)
    calls = record_calls(monkeypatch)
    for a, b in zip(runs(X, Y), ref):
        assert_same_log(a, b)
    assert any(after < before for before, after, _ in calls)
    # whenever nothing was dropped, the others' columns held stayed within the bound
    assert all(before - own <= keep_rows for before, after, own in calls if after == before)


def test_a_run_keeps_the_earliest_of_the_others_columns_within_the_setting(monkeypatch):
    """PLAB_SHARED_COLUMNS_GB bounds the other runs' columns a run keeps: when the store makes
    room, the others' columns within that amount stay (the earliest computed), the rest go, and
    every run still records its log as alone."""
    X, Y = pixels()
    ref = alone(X, Y)
    keep_rows = 50
    monkeypatch.setenv(columns.KEEP_ENV, repr(keep_rows * len(X) * 4 / 1e9))
    calls = record_calls(monkeypatch)
    for a, b in zip(runs(X, Y), ref):
        assert_same_log(a, b)
    dropped = [(before, after, own) for before, after, own in calls if after < before]
    assert dropped
    # after a drop the store holds the run's columns and between 1 and keep_rows of the others'
    assert all(0 < after - own <= keep_rows for before, after, own in dropped)


@pytest.mark.parametrize("text", ["lots", "-1", "nan"])
def test_a_bad_shared_columns_setting_is_a_config_error_that_names_the_fix(monkeypatch, text):
    from perceptron_lab.errors import ConfigError

    monkeypatch.setenv(columns.KEEP_ENV, text)
    with pytest.raises(ConfigError) as err:
        columns.keep_gb()
    msg = str(err.value)
    assert err.value.exit_code == 2 and "\n" not in msg
    assert msg.startswith(f"{columns.KEEP_ENV} must be a number of gigabytes >= 0, got {text!r}")
    fix = msg.split("set it to e.g. ")[1].split(",")[0]          # the suggested setting works
    monkeypatch.setenv(*fix.split("="))
    assert columns.keep_gb() == float(fix.split("=")[1])
    monkeypatch.delenv(columns.KEEP_ENV)
    assert columns.keep_gb() == columns.KEEP_GB


def record_calls(monkeypatch):
    """(columns held before, after, the run's own) of every call making room in the store."""
    calls = []
    inner = columns.ColumnStore.make_room

    def recording(self, k, slot_of):
        before, own = self.used, int((slot_of >= 0).sum())
        ok = inner(self, k, slot_of)
        calls.append((before, self.used, own))
        return ok

    monkeypatch.setattr(columns.ColumnStore, "make_room", recording)
    return calls


def test_a_column_that_differs_when_computed_alone_turns_sharing_off_before_it_is_used(monkeypatch):
    X, Y = pixels()
    ref = alone(X, Y)
    order = np.random.default_rng(1).permutation(len(X))
    first = train(X, Y, KERNEL, PerceptronParams(), order, 3, (1, 2, 3), chunk_size=64, dtype=np.float32,
                  flush_at=32)
    assert_same_log(first, ref[0])
    st = columns._STORE["store"]
    st.K[: st.used] *= np.float32(1.0 + 2.0**-20)     # as if another process computed them otherwise
    got = runs(X, Y)
    assert not columns.enabled()
    for a, b in zip(got, ref):
        assert_same_log(a, b)


def test_share_false_keeps_a_runs_columns_to_itself(monkeypatch):
    X, Y = pixels()
    seen = count_columns(monkeypatch)
    order = np.random.default_rng(1).permutation(len(X))
    kw = dict(chunk_size=64, dtype=np.float32, flush_at=32)
    a = train(X, Y, KERNEL, PerceptronParams(), order, 2, (1, 2), **kw)
    n_a = seen["rows"]
    b = train(X, Y, KERNEL, PerceptronParams(), order, 2, (1, 2), share=False, **kw)
    assert seen["rows"] == 2 * n_a
    assert_same_log(a, b)


@pytest.mark.parametrize("share", [True, False], ids=["shared", "own"])
def test_a_run_whose_own_columns_pass_the_cache_limit_stops_with_the_setting_to_raise(share):
    from perceptron_lab.engine.perceptron import EngineError

    X, Y = pixels()
    order = np.random.default_rng(1).permutation(len(X))
    limit = 40 * len(X) * 4 / 1e9          # room for 40 columns; the run needs hundreds
    with pytest.raises(EngineError, match=r"kernel cache needs more than training.cache_limit_gb = .* GB \(>= "):
        train(X, Y, KERNEL, PerceptronParams(), order, 2, (1, 2), chunk_size=64, dtype=np.float32, flush_at=32,
              cache_limit_gb=limit, share=share)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/smaps")
def test_the_store_is_written_without_numpys_huge_page_advice():
    """The store's array: zero-filled, writable, of the shape asked, in a mapping without the
    MADV_HUGEPAGE flag ('hg') that numpy gives a plain array of the same size where it advises."""
    from perceptron_lab.run.runtime import huge_pages

    st = columns.ColumnStore(("key",), 3000, 700, np.float32)   # 8.4 MB
    assert st.K.shape == (700, 3000) and st.K.dtype == np.float32 and st.K.flags.writeable
    assert not st.K.any()
    st.K[699, 2999] = 1.5
    assert st.K[699, 2999] == 1.5
    assert "hg" not in vm_flags(st.K)
    if huge_pages():   # the contrast: numpy's own array of that size
        plain = np.empty((700, 3000), np.float32)
        assert "hg" in vm_flags(plain)


def test_a_digest_on_its_own_thread_is_the_hash_of_the_values():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(300, 20)).astype(np.float32)
    d = columns.Digest(X)
    assert d.result() == columns.digest(X) == hashlib.sha256(X.tobytes()).hexdigest()
    assert columns.digest(X[:, ::2]) == hashlib.sha256(np.ascontiguousarray(X[:, ::2]).tobytes()).hexdigest()
    assert columns.data_key(X, (1, 2), False, d.result()) == columns.data_key(X, (1, 2), False)
    assert columns.Digest(X[1:]).result() != d.result()


def test_a_digest_that_fails_raises_where_its_result_is_asked_for():
    class Broken:
        def __array__(self, *a, **k):
            raise ValueError("unreadable")

    d = columns.Digest(Broken())
    with pytest.raises(ValueError, match="unreadable"):
        d.result()
