"""Speed benchmarks: ``python -m benchmarks`` (``make bench``).

Each case runs our engine and the tool a user would otherwise pick side by side, in the same
invocation, on the same data in the same order, and reports wall time, peak memory, the test
error reached and the ratio between the two. Ratios measured back to back hold on a busy machine
better than absolute seconds do; the machine (CPU, cores, BLAS, load average) is recorded with
every row.

Cases (``--cases`` takes names or numbers, comma-separated; default: all):

1. ``linear``   the linear perceptron on MNIST, one epoch, one-vs-rest: ours (primal form) vs
   scikit-learn's ``Perceptron`` (``shuffle=False``, ``max_iter=1``, ``tol=None``, ``eta0=1``,
   ``fit_intercept=False``: the same algorithm, so the test errors agree exactly).
2. ``averaged`` the averaged perceptron: ours (``avg`` rule of the same run) vs
   ``SGDClassifier(loss="perceptron", average=True, learning_rate="constant", eta0=1, alpha=0,
   penalty=None, fit_intercept=False, shuffle=False, max_iter=1, tol=None)``.
3. ``alma``     ALMA_2 (Gentile 2001), linear, one pass over MNIST "digit 0 vs rest": ours vs
   River's ``ALMAClassifier`` fed the same stream one example at a time.
4. ``kernel``   degree-4 polynomial kernel on the first n MNIST training examples: our voted
   perceptron at T = 1 and T = 10 vs scikit-learn's ``SVC(kernel="poly", degree=4)`` (libsvm)
   with the same kernel function up to a constant factor (see :func:`svc_same_kernel`).
5. ``limit``    one permutation of ``configs/mnist_d4.yaml`` (d = 4, T = 30, every rule at every
   checkpoint) as a child ``plab run``; the unavoidable kernel arithmetic of the run (each support
   vector's kernel column against the training set once, plus the test block) divided by the
   machine's float32 GEMM rate measured in the same invocation: the "fraction of the limit".
6. ``scaling``  the case-5 run on the first 6000, 15000, 30000, 60000 training examples: time and
   peak memory against n, with the growth exponent fitted on log-log axes.
9. ``sparse``   a generated text-like problem (:func:`benchmarks.workers.sparse_text`: 20,000 x
   100,000 term counts at 0.1% density, labels from a sparse hyperplane, seeded; ``--quick``:
   2,000 x 10,000 at 1%) as scipy.sparse CSR matrices: our ``VotedPerceptron`` (rules ``last``
   and ``avg``) vs scikit-learn's ``Perceptron`` with the settings of case 1, neither densifying
   the data; the ``predictions`` column fingerprints each side's test predictions.
13. ``memory``  the peak memory of the headline run, ``plab run configs/mnist_d4.yaml`` with every
   default, against :data:`benchmarks.memory.TARGET_GB`, and with the setting that trades time for
   memory (:mod:`benchmarks.memory`; ``--baseline REV`` adds that revision's run). Run only when
   named, like case 12: each run takes minutes.

Every measured side runs in its own child process (``--worker``), so that its peak resident
memory is its own: ``peak_rss_mb`` is the child's peak (interpreter, the loaded MNIST arrays and
the method), ``extra_peak_mb`` the peak above the memory in use just before the timed call.
Before the timed call each side runs once on 200 examples, which loads numba's cached machine code
(or compiles it after a source change) and scikit-learn's/River's modules; that warm-up is
reported separately (``warmup_seconds``). ``fit_seconds`` times training, ``test_seconds`` the
predictions on the test set (ours computes the prediction rules the peer computes, passed as
``rules=`` to :func:`~perceptron_lab.model.predict.evaluate` as a config's ``prediction.rules`` are; case 1
also measures every rule of :data:`~perceptron_lab.model.predict.RULES`, and case 4 computes every rule),
``total_seconds`` both. Preparing inputs in the form each
tool takes (reordering rows for scikit-learn, building River's dicts) is not timed.

Writes ``results/bench/<case file>.csv``, ``results/bench/ratios.csv`` and
``results/bench/summary.md`` (built from every case file present, so cases can be run separately;
``--summary-only`` rewrites it alone, e.g. after ``make reproduce``, whose wall time and work it
also reports from ``results/reproduce.json``).
"""
