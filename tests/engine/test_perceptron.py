"""The jitted perceptron engine and prediction rules against tests/naive.py, exactly."""

import numpy as np
import pytest

from perceptron_lab.engine.perceptron import PerceptronParams, epochs_to_steps, label_matrix, train
from perceptron_lab.engine.kernels import Kernel, gram, kernel_diag
from perceptron_lab.model.predict import RULES, counts_at_checkpoints, evaluate

from naive import NaivePerceptron, kernel_value, naive_errors, random_slices, steps_to


def small_problem(seed, n=40, f=5, n_classes=3, integer=True):
    rng = np.random.default_rng(seed)
    if integer:
        X = rng.integers(-3, 4, size=(n + 15, f)).astype(float)
    else:
        X = rng.normal(size=(n + 15, f))
    W = rng.normal(size=(f, n_classes))
    y = np.argmax(X @ W + 0.8 * rng.normal(size=(n + 15, n_classes)), axis=1)
    return X[:n], y[:n], X[n:], y[n:]


KERNELS = [
    Kernel("linear"),
    Kernel("poly", degree=3, scale=4.0),
    Kernel("gaussian", sigma=1.5),
    Kernel("poly_gaussian", degree=2, sigma=2.0),
]

VARIANTS = [
    dict(),
    dict(eta=0.5, theta_init=3.0, C=2.0),
    dict(tau_abs=2.5),
    dict(lam=0.5),
    dict(alpha_bound=2),
    # dyadic values keep both implementations' arithmetic exact, so exact ties compare equal
    dict(eta=0.125, theta_init=5.0, C=5.0, tau_abs=1.0, lam=0.25, alpha_bound=3),
]


def run_both(kernel, variant, n_classes, seed, epochs=2.5, checkpoints=(0.3, 1, 1.7, 2.5),
             chunk_size=7, form="auto", vote_weight="survival", flush_at=64, rules=None):
    X, y, Xt, yt = small_problem(seed, n_classes=n_classes, integer=kernel.name != "gaussian")
    Y = label_matrix(y, n_classes)
    order = np.random.default_rng(seed + 1).permutation(len(y))
    params = PerceptronParams(**{k: v for k, v in variant.items()})
    log = train(X, Y, kernel, params, order, epochs, checkpoints, chunk_size=chunk_size, form=form,
                flush_at=flush_at)
    binary = n_classes == 2
    err_m, err_b = evaluate(log, kernel, X, Xt, yt, binary, vote_weight=vote_weight, seed=seed, rules=rules)
    kparams = (kernel.name, kernel.degree, kernel.scale, kernel.sigma)
    for k, cp in enumerate(checkpoints):
        steps = steps_to(cp, len(y))   # the reference's own count, and its own random slices
        assert log.checkpoint_steps[k] == steps, f"checkpoint {cp}"
        ref = NaivePerceptron(X, Y, kparams, alpha_bound=variant.get("alpha_bound"),
                              **{k2: v for k2, v in variant.items() if k2 != "alpha_bound"}).fit(order, steps)
        fast_updates = [(int(s), int(e), int(c)) for s, e, c in zip(log.upd_step, log.upd_ex, log.upd_cls) if s < steps]
        assert fast_updates == ref.updates, f"update sequence differs at checkpoint {cp}"
        rs = random_slices(seed, len(yt), steps)
        ref_err, ref_bin = naive_errors(ref, Xt, yt, binary, rs, vote_weight)
        for r, rule in enumerate(RULES):
            if rules is not None and rule not in rules:
                continue
            assert err_m[k, r] == ref_err[rule], (rule, cp)
            assert list(err_b[k, r]) == ref_bin[rule], (rule, cp)
    return log


@pytest.mark.parametrize("kernel", KERNELS, ids=lambda k: k.name)
@pytest.mark.parametrize("n_classes", [2, 3])
def test_engine_matches_naive_fs(kernel, n_classes):
    run_both(kernel, {}, n_classes, seed=3)


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: ",".join(v) or "plain")
@pytest.mark.parametrize("kernel", [KERNELS[0], KERNELS[1]], ids=lambda k: k.name)
def test_engine_matches_naive_kw_variants(kernel, variant):
    run_both(kernel, variant, 2, seed=11, vote_weight="correct")
    run_both(kernel, variant, 3, seed=12, vote_weight="survival")


@pytest.mark.parametrize("rules", [["last", "longest", "vote"], ["vote"], ["avg", "vote", "last"]], ids="+".join)
@pytest.mark.parametrize("variant", VARIANTS[:4], ids=lambda v: ",".join(v) or "plain")
@pytest.mark.parametrize("kernel", KERNELS, ids=lambda k: k.name)
def test_the_scan_of_rules_without_normalized_or_random_ones_matches_naive(kernel, variant, rules):
    # without a normalized or random rule the scan reads most hypotheses only for the running sums
    # (one pass, two hypotheses at a time; with or without the averaged sums); the checkpoints fall
    # inside and at the end of epochs, so the live and longest hypotheses are read at steps between
    # those passes
    run_both(kernel, variant, 2, seed=21, vote_weight="correct", rules=rules)
    run_both(kernel, variant, 3, seed=22, vote_weight="survival", rules=rules)


@pytest.mark.parametrize("kernel", KERNELS, ids=lambda k: k.name)
def test_rules_not_asked_for_are_reported_uncomputed_and_leave_the_others_unchanged(kernel):
    X, y, Xt, yt = small_problem(31, n_classes=3, integer=kernel.name != "gaussian")
    order = np.random.default_rng(32).permutation(len(y))
    log = train(X, label_matrix(y, 3), kernel, PerceptronParams(tau_abs=0.5), order, 2.5, (0.3, 1, 2.5),
                chunk_size=7)
    every_m, every_b = evaluate(log, kernel, X, Xt, yt, False, vote_weight="correct", seed=3)
    asked = ["last", "longest", "vote"]
    err_m, err_b = evaluate(log, kernel, X, Xt, yt, False, vote_weight="correct", seed=3, rules=asked)
    for r, rule in enumerate(RULES):
        if rule in asked:
            np.testing.assert_array_equal(err_m[:, r], every_m[:, r])
            np.testing.assert_array_equal(err_b[:, r], every_b[:, r])
        else:
            assert (err_m[:, r] == -1).all() and (err_b[:, r] == -1).all(), rule


@pytest.mark.parametrize("chunk_size", [1, 3, 64, 10_000])
@pytest.mark.parametrize("flush_at", [1, 5, 1000])
def test_chunk_size_and_cache_batching_do_not_change_results(chunk_size, flush_at):
    run_both(KERNELS[1], {"tau_abs": 1.0}, 3, seed=5, chunk_size=chunk_size, flush_at=flush_at)


@pytest.mark.parametrize("min_new", [0, 10**9], ids=["chunk-gemm", "per-example-loop"])
@pytest.mark.parametrize("kernel", KERNELS, ids=lambda k: k.name)
def test_chunk_inner_products_by_gemm_or_loop_match_naive(kernel, min_new, monkeypatch):
    import perceptron_lab.engine.perceptron as eng

    monkeypatch.setattr(eng, "CHUNK_DOTS_MIN_NEW", min_new)
    a = run_both(kernel, {"tau_abs": 1.0}, 3, seed=9, chunk_size=16, form="dual")
    b = run_both(kernel, {}, 2, seed=10, chunk_size=5, form="dual")
    assert a.n_updates and b.n_updates


def test_linear_dual_and_primal_agree():
    a = run_both(Kernel("linear"), {}, 3, seed=7, form="primal")
    b = run_both(Kernel("linear"), {}, 3, seed=7, form="dual")
    np.testing.assert_array_equal(a.upd_ex, b.upd_ex)
    np.testing.assert_array_equal(a.upd_step, b.upd_step)


def test_counts_at_checkpoints():
    X, y, _, _ = small_problem(1, n_classes=3)
    Y = label_matrix(y, 3)
    order = np.arange(len(y))
    log = train(X, Y, Kernel("linear"), PerceptronParams(), order, 2, [0.1, 0.3, 0.5, 1, 1.5, 2], chunk_size=5)
    counts = counts_at_checkpoints(log)
    sub = counts_at_checkpoints(log, [4, 1])
    for key in counts:
        np.testing.assert_array_equal(sub[key], counts[key][[4, 1]])
    for k, T in enumerate(log.checkpoint_steps):
        sel = log.upd_step < T
        assert counts["mistakes"][k].sum() == sel.sum()
        assert list(counts["mistakes"][k]) == [int((sel & (log.upd_cls == c)).sum()) for c in range(3)]
        assert counts["support_vectors_union"][k] == len(set(log.upd_ex[sel].tolist()))
        for c in range(3):
            assert counts["support_vectors"][k, c] == len(set(log.upd_ex[sel & (log.upd_cls == c)].tolist()))
    assert counts["mistakes"][0].sum() <= counts["mistakes"][1].sum()


def test_alpha_bound_caps_updates_per_example():
    X, y, _, _ = small_problem(2, n=60, n_classes=2)
    Y = label_matrix(y, 2)
    log = train(X, Y, Kernel("linear"), PerceptronParams(alpha_bound=2), np.arange(60), 20, [20])
    per_example = np.bincount(log.upd_ex, minlength=60)
    assert per_example.max() <= 2
    unbounded = train(X, Y, Kernel("linear"), PerceptronParams(), np.arange(60), 20, [20])
    assert np.bincount(unbounded.upd_ex, minlength=60).max() > 2


def test_lambda_stops_updates_on_repeatedly_mistaken_example():
    # Two contradictory copies of one point: without lambda they keep updating forever;
    # with a large lambda each stops after its first update.
    X = np.array([[1.0, 2.0], [1.0, 2.0], [-2.0, 1.0]])
    y = np.array([1, 0, 1])
    Y = label_matrix(y, 2)
    plain = train(X, Y, Kernel("linear"), PerceptronParams(), np.arange(3), 10, [10])
    lam = train(X, Y, Kernel("linear"), PerceptronParams(lam=10.0), np.arange(3), 10, [10])
    assert plain.n_updates > 10
    assert np.bincount(lam.upd_ex, minlength=3).max() == 1


def test_gram_matches_scalar_kernel():
    rng = np.random.default_rng(0)
    A, B = rng.normal(size=(6, 4)), rng.normal(size=(5, 4))
    for k in KERNELS:
        G = gram(k, A, B)
        ref = [[kernel_value(k.name, k.degree, k.scale, k.sigma, a, b) for b in B] for a in A]
        np.testing.assert_allclose(G, ref, rtol=1e-12)
        np.testing.assert_allclose(kernel_diag(k, A), [kernel_value(k.name, k.degree, k.scale, k.sigma, a, a) for a in A])


def test_training_is_deterministic():
    X, y, _, _ = small_problem(4, n_classes=3)
    Y = label_matrix(y, 3)
    order = np.random.default_rng(0).permutation(len(y))
    a = train(X, Y, KERNELS[1], PerceptronParams(), order, 3, [1, 3])
    b = train(X, Y, KERNELS[1], PerceptronParams(), order, 3, [1, 3])
    for name in ("upd_step", "upd_ex", "upd_cls", "upd_coef", "upd_score", "cum_correct_cp"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))


def test_range_safe_float32_kernel_keeps_the_float64_mistakes():
    # degree 6 on 0..255 "pixels": the unscaled kernel overflows float32 (values ~1e40),
    # the range-safe one (a constant factor) must make the same updates as float64.
    rng = np.random.default_rng(0)
    X = rng.integers(0, 256, size=(120, 300)).astype(float) * (rng.random((120, 300)) < 0.3)
    y = rng.integers(0, 3, size=120)
    Y = label_matrix(y, 3)
    k = Kernel("poly", degree=6, scale=1.0)
    assert not np.isfinite(gram(k, X.astype(np.float32), X.astype(np.float32))).all()
    k32 = k.range_safe(X, np.float32)
    assert k32.base_div > 1 and np.isfinite(gram(k32, X.astype(np.float32), X.astype(np.float32))).all()
    order = rng.permutation(120)
    a = train(X, Y, k, PerceptronParams(), order, 3, [1, 3], dtype=np.float64)
    b = train(X, Y, k32, PerceptronParams(), order, 3, [1, 3], dtype=np.float32)
    np.testing.assert_array_equal(a.upd_ex, b.upd_ex)
    np.testing.assert_array_equal(a.upd_cls, b.upd_cls)
    assert k.range_safe(X, np.float64) is k


def test_degree_one_polynomial_primal_matches_dual():
    # Freund & Schapire's d = 1 runs in primal form on the features (1, x / sqrt(s)).
    k = Kernel("poly", degree=1, scale=4.0)
    a = run_both(k, {}, 3, seed=9, form="primal")
    b = run_both(k, {}, 3, seed=9, form="dual")
    np.testing.assert_array_equal(a.upd_ex, b.upd_ex)
    np.testing.assert_array_equal(a.upd_cls, b.upd_cls)


# ----------------------------------------------------------------------------- primal loop (engine.linear)

PRIMAL_KERNELS = [Kernel("linear"), Kernel("poly", degree=1, scale=4.0)]
LOG_FIELDS = ("upd_step", "upd_ex", "upd_cls", "upd_coef", "upd_score", "upd_kxx", "upd_theta",
              "upd_cum_correct", "cum_correct_cp", "checkpoint_steps")


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: ",".join(v) or "plain")
@pytest.mark.parametrize("kernel", PRIMAL_KERNELS, ids=lambda k: k.describe())
@pytest.mark.parametrize("n_classes", [2, 3])
def test_primal_loop_matches_naive_and_the_chunked_driver(kernel, variant, n_classes):
    # the per-example loop is what train() runs for primal perceptron runs; every rule at every
    # checkpoint (fractional ones included) against the naive reference, and the whole log
    # against the chunked driver's, field by field
    log = run_both(kernel, variant, n_classes, seed=40 + n_classes, form="primal",
                   vote_weight="correct" if n_classes == 2 else "survival")
    assert log.info.get("loop") == "linear" and log.n_updates > 0
    X, y, _, _ = small_problem(40 + n_classes, n_classes=n_classes)
    order = np.random.default_rng(41 + n_classes).permutation(len(y))
    old = train(X, label_matrix(y, n_classes), kernel, PerceptronParams(**variant), order, 2.5, (0.3, 1, 1.7, 2.5),
                chunk_size=7, form="primal", primal_loop=False)
    assert "loop" not in old.info
    for name in LOG_FIELDS:
        np.testing.assert_array_equal(getattr(log, name), getattr(old, name), err_msg=name)


def test_primal_loop_segments_and_progress():
    from perceptron_lab.engine.linear import train_perceptron_primal

    X, y, _, _ = small_problem(8, n_classes=3)
    Y = label_matrix(y, 3)
    order = np.random.default_rng(9).permutation(len(y))
    params = PerceptronParams(tau_abs=1.0, lam=0.5)
    ref = train_perceptron_primal(X, Y, Kernel("linear"), params, order, 3.3, [0.05, 1, 3.3])
    for seg in (1, 2, 13, 1000):
        done = []
        log = train_perceptron_primal(X, Y, Kernel("linear"), params, order, 3.3, [0.05, 1, 3.3], segment=seg,
                                      progress=done.append)
        assert sum(done) == log.total_steps == epochs_to_steps(3.3, len(y))
        for name in LOG_FIELDS:
            np.testing.assert_array_equal(getattr(log, name), getattr(ref, name), err_msg=name)
    f32 = train_perceptron_primal(X, Y, Kernel("linear"), params, order, 3.3, [0.05, 1, 3.3], dtype=np.float32)
    np.testing.assert_array_equal(f32.upd_ex, ref.upd_ex)  # small integers: exact in float32


COMBINED_RULE_SETS = [["last"], ["avg"], ["last", "avg"], ["avg_norm", "last_norm"], ["longest", "avg", "last"],
                      ["last", "last_norm", "avg", "avg_norm", "longest"]]


@pytest.mark.parametrize("variant", [VARIANTS[0], VARIANTS[1], VARIANTS[5]], ids=["plain", "theta", "all"])
@pytest.mark.parametrize("kernel", PRIMAL_KERNELS, ids=lambda k: k.describe())
@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("form", ["primal", "dual"])
def test_requested_rules_from_combined_classifiers_match_naive(kernel, variant, n_classes, form):
    # evaluate(rules=...) without vote/random: one combined vector per rule and checkpoint
    # (last, avg, normalized, longest survivor) instead of every hypothesis' score
    seed = 50 + n_classes
    X, y, Xt, yt = small_problem(seed, n_classes=n_classes)
    Y = label_matrix(y, n_classes)
    order = np.random.default_rng(seed + 1).permutation(len(y))
    cps = (0.3, 1, 1.7, 2.5)
    log = train(X, Y, kernel, PerceptronParams(**variant), order, 2.5, cps, chunk_size=7, form=form)
    binary = n_classes == 2
    kparams = (kernel.name, kernel.degree, kernel.scale, kernel.sigma)
    for vw in ("survival", "correct"):
        full_m, full_b = evaluate(log, kernel, X, Xt, yt, binary, vote_weight=vw, seed=seed)
        refs = []
        for k, cp in enumerate(cps):
            ref = NaivePerceptron(X, Y, kparams, alpha_bound=variant.get("alpha_bound"),
                                  **{k2: v for k2, v in variant.items() if k2 != "alpha_bound"}
                                  ).fit(order, steps_to(cp, len(y)))
            rs = random_slices(seed, len(yt), steps_to(cp, len(y)))
            refs.append(naive_errors(ref, Xt, yt, binary, rs, vw))
        for rules in COMBINED_RULE_SETS:
            err_m, err_b = evaluate(log, kernel, X, Xt, yt, binary, vote_weight=vw, seed=seed, rules=rules)
            for r, rule in enumerate(RULES):
                if rule not in rules:
                    assert (err_m[:, r] == -1).all() and (err_b[:, r] == -1).all(), rule
                    continue
                np.testing.assert_array_equal(err_m[:, r], full_m[:, r], err_msg=rule)
                np.testing.assert_array_equal(err_b[:, r], full_b[:, r], err_msg=rule)
                for k, (ref_err, ref_bin) in enumerate(refs):
                    assert err_m[k, r] == ref_err[rule], (rule, cps[k], vw)
                    assert list(err_b[k, r]) == ref_bin[rule], (rule, cps[k], vw)


def test_combined_classifiers_score_the_test_set_in_blocks():
    from perceptron_lab.model.predict import Hypotheses, _evaluate_combined_expansion

    X, y, Xt, yt = small_problem(60, n=60, n_classes=3)
    Y = label_matrix(y, 3)
    log = train(X, Y, Kernel("linear"), PerceptronParams(), np.arange(60), 2, [0.5, 2])
    hyp = Hypotheses(log)
    live, partial, longest = hyp.at_checkpoints(np.arange(2))
    rules = ["last", "avg", "longest"]
    one = _evaluate_combined_expansion(log, Kernel("linear"), hyp, live, partial, longest, X, Xt, yt, False, rules)
    for blk in (1, 7, 50):
        many = _evaluate_combined_expansion(log, Kernel("linear"), hyp, live, partial, longest, X, Xt, yt, False,
                                            rules, block_elems=blk)
        np.testing.assert_array_equal(one[0], many[0])
        np.testing.assert_array_equal(one[1], many[1])


@pytest.mark.parametrize("variant", [VARIANTS[0], VARIANTS[3], VARIANTS[5]], ids=["plain", "lambda", "all"])
def test_primal_loop_label_groups_give_the_same_log(variant):
    # the labels run in parallel groups (label c in group c mod G); the merged log is the same
    from perceptron_lab.engine.linear import train_perceptron_primal

    X, y, _, _ = small_problem(13, n=50, n_classes=5)
    Y = label_matrix(y, 5)
    order = np.random.default_rng(14).permutation(len(y))
    args = (X, Y, Kernel("poly", degree=1, scale=4.0), PerceptronParams(**variant), order, 3.5, [0.2, 1, 3.5])
    ref = train_perceptron_primal(*args, threads=1, segment=17)
    assert ref.n_updates > 0
    for threads in (2, 3, 5, 8):
        log = train_perceptron_primal(*args, threads=threads, segment=17)
        for name in LOG_FIELDS:
            np.testing.assert_array_equal(getattr(log, name), getattr(ref, name), err_msg=(name, threads))


def test_counts_at_checkpoints_do_not_depend_on_the_logs_order():
    """The counts read the update steps as sorted when they are (training order) and sort them
    otherwise: a log whose updates are listed in another order counts the same."""
    import dataclasses

    rng = np.random.default_rng(8)
    X, y = rng.normal(size=(120, 5)), rng.integers(0, 3, 120)
    log = train(X, label_matrix(y, 3), Kernel("linear"), PerceptronParams(), rng.permutation(120), 4,
                [0.5, 1, 2, 4])
    perm = rng.permutation(log.n_updates)
    shuffled = dataclasses.replace(log, upd_step=log.upd_step[perm], upd_cls=log.upd_cls[perm],
                                   upd_ex=log.upd_ex[perm])
    a, b = counts_at_checkpoints(log), counts_at_checkpoints(shuffled)
    assert a["mistakes"][-1].sum() == log.n_updates
    for k in a:
        np.testing.assert_array_equal(a[k], b[k])


@pytest.mark.parametrize("shape", [(9000, 37), (4096, 5), (4097, 64), (1, 3), (0, 4)])  # 4096 rows a block
def test_sq_norms64_equals_the_norms_of_a_float64_copy(shape):
    """kernel_diag's block-wise float64 norms are bit for bit those of a whole float64 copy, on
    float32 rows with fractional values (where the order of the sum would show) and on a strided view."""
    from perceptron_lab.engine.kernels import sq_norms, sq_norms64

    rng = np.random.default_rng(shape[0])
    X = (rng.standard_normal(shape) * 3.7).astype(np.float32)
    for A in (X, X[::2, ::-1]):
        want = sq_norms(np.asarray(A, dtype=np.float64))
        got = sq_norms64(A)
        assert got.dtype == np.float64 and got.shape == want.shape
        assert np.array_equal(got, want)
