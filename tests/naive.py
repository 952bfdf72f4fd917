"""Slow, obvious reference implementations that the fast engines must match exactly.

Written straight from the papers' pseudo-code, with no chunking or prefix sums:
Freund & Schapire (1999) Figure 1 and §5, Khardon & Wachman (2007) Figure 2, Gentile (2001)
Figure 1 (ALMA_p) and §4. Every hypothesis is stored explicitly (as a list of (example,
coefficient) pairs, a coefficient vector or a weight vector) and evaluated from scratch. Training
to a checkpoint is simply training for that many steps. The only shortcut is memoization of pure
values: a kernel value K(x_i, x_j) or K(x_j, x) and the norm of a stored hypothesis are computed once,
by the same expression in the same order, and looked up after that, so every number is the one the
literal recomputation would give.
"""

from __future__ import annotations

import math

import numpy as np


def read_libsvm(path, rows, n_features):
    """The first ``rows`` lines of a LIBSVM text file, read literally: (X, y) with X dense
    (``n_features`` columns, feature j in column j - 1) and y the integer labels as written."""
    X, y = [], []
    with open(path) as fh:
        for line in fh:
            if len(y) == rows:
                break
            label, *pairs = line.split()
            x = [0.0] * n_features
            for pair in pairs:
                j, v = pair.split(":")
                x[int(j) - 1] = float(v)
            X.append(x)
            y.append(int(float(label)))
    return np.array(X), np.array(y)


def kernel_value(name, degree, scale, sigma, a, b):
    dot = float(sum(float(u) * float(v) for u, v in zip(a, b)))
    if name == "linear":
        return dot
    if name == "poly":
        return (1.0 + dot / scale) ** degree
    d2 = float(sum((float(u) - float(v)) ** 2 for u, v in zip(a, b)))
    g = math.exp(-d2 / (2.0 * sigma * sigma))
    if name == "gaussian":
        return g
    return (1.0 + g) ** degree


class NaivePerceptron:
    """One-vs-rest perceptrons with every Khardon-Wachman option, trained for ``steps`` steps.

    ``Y`` holds the +1/-1 label columns. After training, ``hyps[c]`` is the list of hypotheses of
    label c, each a dict with ``sv`` (list of (example, coef)), ``theta``, ``created`` (step),
    ``correct`` (correct predictions made while it was current).
    """

    def __init__(self, X, Y, kernel, eta=1.0, theta_init=0.0, C=0.0, tau_abs=0.0, lam=0.0,
                 alpha_bound=None, lam_diagonal=False):
        self.X, self.Y = np.asarray(X, float), np.asarray(Y)
        self.k = kernel  # (name, degree, scale, sigma)
        self.eta, self.theta_init, self.C = eta, theta_init, C
        self.tau_abs, self.lam, self.alpha_bound = tau_abs, lam, alpha_bound
        # the lambda-trick: False, Khardon & Wachman's eq. (1), y lam K(x, x) once x has caused an
        # update; True, lam K(x, x) on the kernel's diagonal, i.e. y eta alpha_x lam K(x, x)
        self.lam_diagonal = lam_diagonal

    def K(self, i, j):
        # memoized: kernel_value is a pure function of the two rows
        cache = self.__dict__.setdefault("_gram", {})
        key = (int(i), int(j))
        if key not in cache:
            cache[key] = kernel_value(*self.k, self.X[i], self.X[j])
        return cache[key]

    def score(self, hyp, i):
        return sum(coef * self.K(j, i) for j, coef in hyp["sv"])

    def fit(self, order, steps):
        n, L = self.Y.shape
        self.hyps = [[{"sv": [], "theta": self.theta_init, "created": 0, "correct": 0}] for _ in range(L)]
        self.updates = []
        mcount = np.zeros((n, L), dtype=int)
        for t in range(steps):
            i = order[t % n]
            for c in range(L):
                cur = self.hyps[c][-1]
                y = self.Y[i, c]
                s = self.score(cur, i)
                if self.lam and mcount[i, c] != 0:
                    if self.lam_diagonal:
                        # each of x's alpha_x updates added eta y K'(x, x) = eta y (K(x, x) + lam K(x, x))
                        s += y * self.lam * self.K(i, i) * (self.eta * mcount[i, c])
                    else:
                        s += y * self.lam * self.K(i, i)
                if s < cur["theta"] - self.tau_abs:
                    yhat = -1
                elif s > cur["theta"] + self.tau_abs:
                    yhat = 1
                else:
                    yhat = 0
                if yhat == y:
                    cur["correct"] += 1
                elif self.alpha_bound is None or mcount[i, c] < self.alpha_bound:
                    mcount[i, c] += 1
                    self.hyps[c].append({
                        "sv": cur["sv"] + [(i, self.eta * y)],
                        "theta": cur["theta"] - self.eta * y * self.C,
                        "created": t, "correct": 0,
                    })
                    self.updates.append((t, i, c))
        self.steps = steps
        return self

    def norm(self, hyp):
        # a hypothesis' support list never changes once stored, so its norm is computed once
        if "norm" not in hyp:
            hyp["norm"] = math.sqrt(max(0.0, sum(a * b * self.K(i, j) for i, a in hyp["sv"] for j, b in hyp["sv"])))
        return hyp["norm"]

    def test_kernel(self, j, x):
        """K(x_j, x) for training example j and test point x (memoized per test point)."""
        rows = self.__dict__.setdefault("_ktest_rows", {})
        row = rows.setdefault(np.asarray(x, float).tobytes(), {})
        j = int(j)
        if j not in row:
            row[j] = kernel_value(*self.k, self.X[j], x)
        return row[j]

    def test_score(self, hyp, x):
        return sum(coef * self.test_kernel(j, x) for j, coef in hyp["sv"]) - hyp["theta"]

    def rule_scores(self, x, r, vote_weight="survival"):
        """Scores of every rule for test point x; r is the random time slice."""
        out = {name: [] for name in
               ("last", "last_norm", "avg", "avg_norm", "vote", "random", "random_norm", "longest")}
        for hyps in self.hyps:
            f = [self.test_score(h, x) for h in hyps]
            nrm = [self.norm(h) for h in hyps]
            fn = [fk / nk if nk > 0 else 0.0 for fk, nk in zip(f, nrm)]
            if vote_weight == "survival":  # Freund & Schapire Figure 1: c = 1 at creation
                w = [h["correct"] + (1 if k > 0 else 0) for k, h in enumerate(hyps)]
            else:
                w = [h["correct"] for h in hyps]
            sign = [int(fk > 0) - int(fk < 0) for fk in f]
            alive = live_index(hyps, r)
            best = max(h["correct"] for h in hyps)
            ls = min(k for k, h in enumerate(hyps) if h["correct"] == best)
            out["last"].append(f[-1])
            out["last_norm"].append(fn[-1])
            out["avg"].append(sum(a * b for a, b in zip(w, f)))
            out["avg_norm"].append(sum(a * b for a, b in zip(w, fn)))
            out["vote"].append(sum(a * b for a, b in zip(w, sign)))
            out["random"].append(f[alive])
            out["random_norm"].append(fn[alive])
            out["longest"].append(f[ls])
        return out


def steps_to(epochs, n):
    """Training steps (rounds of the inner loop of Freund & Schapire's Figure 1) in ``epochs``
    passes over ``n`` examples, to the nearest step: a checkpoint at T = 0.1 is a tenth of a pass."""
    return int(round(float(epochs) * n))


def random_slices(entropy, n_test, T, spawn_key=()):
    """The time slices of Freund & Schapire's "random" rule (§5) for ``n_test`` test points after
    ``T`` rounds: "we choose a 'time slice' r in {0, ..., t} uniformly at random", t the number of
    rounds executed, one r per test point shared by every label.

    Drawn here from plain numbers, never from the package: numpy's default generator (PCG64) seeded
    with ``SeedSequence(entropy, spawn_key=spawn_key + (T,))``, ``n_test`` integers in [0, T + 1)
    in one call. That is the stream plab states for the rule (a checkpoint's draws keyed by the
    unit's rule seed and T alone, :func:`perceptron_lab.model.predict.random_slices`), so a run's
    random-rule errors compare exactly; a unit's rule seed is its key with spawn key (1,)
    (:mod:`perceptron_lab.engine.seeds`), a plain int ``entropy`` what the engine tests pass."""
    seq = np.random.SeedSequence(entropy, spawn_key=tuple(int(k) for k in spawn_key) + (int(T),))
    return np.random.Generator(np.random.PCG64(seq)).integers(0, int(T) + 1, size=int(n_test))


def live_index(hyps, r):
    """Freund & Schapire §5: r_l, "the index of the final vector which existed at time r", the
    largest k with c_1 + ... + c_(k-1) <= r. With v_k created by the update at step s_k (0-based,
    v_1 = 0 at the start), the rounds before s_k are counted by c_1 .. c_(k-1), so the condition is
    s_k <= r."""
    return max(k for k, h in enumerate(hyps) if k == 0 or h["created"] <= r)


def naive_errors(model, X_test, y_test, binary, rslices, vote_weight="survival"):
    """Wrong predictions per rule: multiclass (argmax, first on ties) or binary (score > 0)."""
    err = {}
    err_bin = {}
    L = len(model.hyps)
    for t, x in enumerate(np.asarray(X_test, float)):
        sc = model.rule_scores(x, rslices[t], vote_weight)
        for rule, s in sc.items():
            if binary:
                pred = 1 if s[0] > 0 else 0
            else:
                pred = int(np.argmax(s))
            err[rule] = err.get(rule, 0) + int(pred != y_test[t])
            eb = err_bin.setdefault(rule, [0] * L)
            for c in range(L):
                truth = (y_test[t] == 1) if binary else (y_test[t] == c)
                eb[c] += int((s[c] > 0) != truth)
    return err, err_bin


class NaiveAlma(NaivePerceptron):
    """One-vs-rest ALMA_p(alpha; B, C), Gentile (2001) Figure 1, trained for ``steps`` steps.

    ``kernel`` = (name, degree, scale, sigma) gives the dual form (p = 2 only): a hypothesis is
    w = sum_j beta_j x^_j over normalized instances x^ = phi(x) / sqrt(K(x, x)), kept as a dense
    coefficient vector beta (one entry per training example); margins and norms are computed from
    scratch from the normalized Gram matrix. ``kernel=None`` gives the primal form (any p >= 2):
    explicit weight vectors, x^ = x / |x|_p, the link f and its inverse applied literally.
    Hypotheses are dicts with ``beta`` or ``w``, ``theta`` (always 0), ``created``, ``correct``;
    the prediction rules of :class:`NaivePerceptron` apply unchanged (test scores w . x, with x
    normalized in feature space in the dual form, which changes no sign or argmax).
    """

    def __init__(self, X, Y, kernel, alpha=1.0, B=None, C=math.sqrt(2.0), p=2.0):
        super().__init__(X, Y, kernel if kernel is not None else ("linear", 1, 1.0, 1.0))
        self.dual = kernel is not None
        if self.dual and p != 2:
            raise ValueError("the dual form is for p = 2")
        self.alpha, self.B, self.C, self.p = alpha, (1.0 / alpha if B is None else B), C, float(p)
        self.q = self.p / (self.p - 1.0)
        n = len(self.X)
        if self.dual:
            G = np.array([[self.K(i, j) for j in range(n)] for i in range(n)])
            d = np.sqrt(np.diag(G))
            self.G = G / np.outer(d, d)  # K^(x_i, x_j) = K(x_i, x_j) / sqrt(K(x_i, x_i) K(x_j, x_j))
        self._ktest = {}

    # ---- the pieces of Figure 1, literally
    @staticmethod
    def pnorm(v, r):
        return float(sum(abs(float(x)) ** r for x in v) ** (1.0 / r))

    def f(self, w):
        """f_i(w) = sign(w_i) |w_i|^(q-1) / |w|_q^(q-2)"""
        n = self.pnorm(w, self.q)
        if n == 0:
            return np.zeros(len(w))
        return np.array([math.copysign(abs(x) ** (self.q - 1), x) if x != 0 else 0.0 for x in w]) / n ** (self.q - 2)

    def f_inv(self, th):
        """f^-1_i(theta) = sign(theta_i) |theta_i|^(p-1) / |theta|_p^(p-2)"""
        n = self.pnorm(th, self.p)
        if n == 0:
            return np.zeros(len(th))
        return np.array([math.copysign(abs(x) ** (self.p - 1), x) if x != 0 else 0.0 for x in th]) / n ** (self.p - 2)

    def xhat(self, i):
        return self.X[i] / self.pnorm(self.X[i], self.p)

    def margin(self, hyp, i, y):
        if self.dual:
            return y * float(hyp["beta"] @ self.G[:, i])
        return y * float(np.dot(hyp["w"], self.xhat(i)))

    def fit(self, order, steps):
        n, L = self.Y.shape
        self.hyps = [[{"beta": np.zeros(n)} if self.dual else {"w": np.zeros(self.X.shape[1])}
                      for _ in range(1)] for _ in range(L)]
        for hs in self.hyps:
            hs[0].update(theta=0.0, created=0, correct=0)
        self.updates = []
        self.norms = []
        for t in range(steps):
            i = order[t % n]
            for c in range(L):
                cur = self.hyps[c][-1]
                if not np.any(self.X[i] != 0):  # footnote 3
                    cur["correct"] += 1
                    continue
                y = int(self.Y[i, c])
                k = len(self.hyps[c])  # the current hypothesis is w_k
                gamma = self.B * math.sqrt(self.p - 1) / math.sqrt(k)
                if self.margin(cur, i, y) > (1 - self.alpha) * gamma:
                    cur["correct"] += 1
                    continue
                eta = self.C / (math.sqrt(self.p - 1) * math.sqrt(k))
                if self.dual:
                    beta = cur["beta"].copy()
                    beta[i] += eta * y
                    N = max(1.0, self.norm({"beta": beta}))
                    new = {"beta": beta / N}
                else:
                    w_prime = self.f_inv(self.f(cur["w"]) + eta * y * self.xhat(i))
                    N = max(1.0, self.pnorm(w_prime, self.q))
                    new = {"w": w_prime / N}
                new.update(theta=0.0, created=t, correct=0)
                self.hyps[c].append(new)
                self.updates.append((t, i, c))
                self.norms.append(self.norm(new))
        self.steps = steps
        return self

    def norm(self, hyp):
        if self.dual:
            b = hyp["beta"]
            return math.sqrt(max(0.0, float(b @ self.G @ b)))
        return self.pnorm(hyp["w"], self.q)

    def test_score(self, hyp, x):
        if self.dual:
            key = np.asarray(x, float).tobytes()
            if key not in self._ktest:
                kx = kernel_value(*self.k, x, x)
                self._ktest[key] = np.array([kernel_value(*self.k, self.X[j], x) / math.sqrt(self.K(j, j) * kx)
                                             for j in range(len(self.X))])
            return float(hyp["beta"] @ self._ktest[key])
        return float(np.dot(hyp["w"], x))


# ============================================================ budgeted kernel perceptrons, NORMA


class NaiveBudget:
    """Literal transcriptions of the budgeted algorithms, one label column at a time.

    The hypothesis of a label is a Python list of [example, coefficient] pairs in insertion order
    (oldest first); every score is computed from scratch with :func:`kernel_value`. ``fit``
    returns the events (step, label, kind, example) with kinds as in
    ``perceptron_lab.engine.budget`` (0 mistake, 1 insert, 2 remove, 3 project, 4 margin) and
    keeps ``self.sv[c]`` and ``self.avg[c]`` (a dict example -> summed coefficient).

    ``forgetron_mu``: where the Forgetron's mu is taken. ``"before"`` (plab's reading, the
    engine's): ``mu = y_r f'_t(x_r)`` on the hypothesis after adding x_t, before the shrinking, so
    that phi solves ``Psi(sigma phi, mu) + Q <= 15/32 M``. ``"shrunk"`` (DOGMA's
    ``k_forgetron_st_train.m`` and KOL's ``kernel_forgetron.h``): mu on the shrunk hypothesis
    ``phi f'_t``, i.e. ``Psi(sigma phi, phi mu) + Q <= 15/32 M``, the largest phi in (0, 1] before
    the first root of that quadratic in phi.
    """

    def __init__(self, X, Y, kernel, algorithm, budget, eta=0.1, lam=0.0, rho=1.0, schedule="constant", seed=0,
                 forgetron_mu="before"):
        self.X, self.Y = np.asarray(X, float), np.asarray(Y)
        self.k = kernel
        self.alg, self.B = algorithm, budget
        self.eta, self.lam, self.rho, self.schedule, self.seed = eta, lam, rho, schedule, seed
        self.forgetron_mu = forgetron_mu

    def scores(self, sv, X_test):
        """The scores ``sum_j a_j K(x_j, x)`` of a hypothesis ``sv`` (a list of [example, coefficient])
        on every row of ``X_test``, added in the hypothesis' order."""
        return np.array([sum(a * self.test_kernel(j, x) for j, a in sv) for x in np.asarray(X_test, float)])

    def test_kernel(self, j, x):
        """K(x_j, x) for training example j and test point x (memoized: a pure function of the rows)."""
        cache = self.__dict__.setdefault("_ktest", {})
        key = (int(j), np.asarray(x, float).tobytes())
        if key not in cache:
            cache[key] = kernel_value(*self.k, self.X[j], x)
        return cache[key]

    def K(self, i, j):
        # memoized: kernel_value is a pure function of the two rows
        cache = self.__dict__.setdefault("_gram", {})
        key = (int(i), int(j))
        if key not in cache:
            cache[key] = kernel_value(*self.k, self.X[i], self.X[j])
        return cache[key]

    def f(self, sv, i):
        return sum(a * self.K(j, i) for j, a in sv)

    def fit(self, order, steps, X_vote=None, keep=()):
        """Run ``steps`` steps; with ``X_vote``, ``self.vote[r, c]`` sums sign(h_t(x_r)) over the
        hypotheses h_1 ... h_steps of label c (after each step). ``keep``: step counts T after which
        to copy every label's hypothesis into ``self.kept[T]`` (h_T, a list per label)."""
        n, L = self.Y.shape
        keep = {int(T) for T in keep}
        self.kept = {}
        self.vote = None if X_vote is None else np.zeros((len(X_vote), L))
        u = np.random.default_rng(self.seed).random((steps, L))
        self.sv = [[] for _ in range(L)]
        self.avg = [dict() for _ in range(L)]
        self.Q = [0.0] * L
        self.M = [0] * L
        self.Kinv = [np.zeros((0, 0)) for _ in range(L)]
        ev = []
        for t in range(steps):
            i = order[t % n]
            for c in range(L):
                y = int(self.Y[i, c])
                sv = self.sv[c]
                yf = y * self.f(sv, i)
                if yf <= 0:
                    ev.append((t, c, 0, i))
                    self.M[c] += 1
                getattr(self, "_" + self.alg.replace("++", "pp"))(c, t, i, y, yf, u[t, c], ev)
                for j, a in self.sv[c]:
                    self.avg[c][j] = self.avg[c].get(j, 0.0) + a
                if X_vote is not None:  # the voted rule: every step's hypothesis votes its sign
                    for r, x in enumerate(X_vote):
                        s = sum(a * kernel_value(*self.k, self.X[j], x) for j, a in self.sv[c])
                        self.vote[r, c] += 1 if s > 0 else (-1 if s < 0 else 0)
            if t + 1 in keep:
                self.kept[t + 1] = [[list(term) for term in sv] for sv in self.sv]
        return ev

    # Stoptron: the perceptron until the support set is full
    def _stoptron(self, c, t, i, y, yf, u, ev):
        if yf <= 0 and len(self.sv[c]) < self.B:
            self.sv[c].append([i, float(y)])
            ev.append((t, c, 1, i))

    # Cavallanti, Cesa-Bianchi & Gentile (2007), Figure 1: discard a random support vector when full
    def _rbp(self, c, t, i, y, yf, u, ev):
        if yf <= 0:
            if len(self.sv[c]) == self.B:
                j, _ = self.sv[c].pop(int(u * len(self.sv[c])))
                ev.append((t, c, 2, j))
            self.sv[c].append([i, float(y)])
            ev.append((t, c, 1, i))

    # Dekel, Shalev-Shwartz & Singer (2008), Figure 3: the self-tuned Forgetron
    def _forgetron(self, c, t, i, y, yf, u, ev):
        if yf > 0:
            return
        sv = self.sv[c]
        sv_prime = sv + [[i, float(y)]]  # I'_t with sigma_t = 1
        if len(sv_prime) <= self.B:
            self.sv[c] = sv_prime
            ev.append((t, c, 1, i))
            return
        r, a_r = sv_prime[0]  # r_t = min I_t, the oldest
        y_r = int(self.Y[r, c])
        sigma_r = a_r * y_r
        mu = y_r * self.f(sv_prime, r)

        def psi(lam_, mu_):
            return lam_ ** 2 + 2 * lam_ - 2 * lam_ * mu_

        cq = self.Q[c] - 15 / 32 * self.M[c]  # < 0: Q <= 15/32 (M - 1) before this mistake
        if self.forgetron_mu == "before":
            # phi_t = max{phi in (0, 1] : Psi(sigma_r phi, mu) + Q <= 15/32 M}: the larger root of the quadratic
            if psi(sigma_r, mu) + self.Q[c] <= 15 / 32 * self.M[c]:
                phi = 1.0
            else:
                lam_plus = -(1 - mu) + math.sqrt(max((1 - mu) ** 2 - cq, 0.0))
                phi = lam_plus / sigma_r
            self.Q[c] += psi(sigma_r * phi, mu)
        else:
            # g(phi) = Psi(sigma_r phi, phi mu) + cq = (sigma^2 - 2 sigma mu) phi^2 + 2 sigma phi + cq, g(0) < 0:
            # phi = 1 if g(1) <= 0, else the smallest root in (0, 1)
            a2, b1 = sigma_r ** 2 - 2 * sigma_r * mu, 2 * sigma_r
            if a2 + b1 + cq <= 0:
                phi = 1.0
            elif a2 == 0:
                phi = -cq / b1
            else:
                roots = sorted(r for r in ((-b1 + math.sqrt(b1 * b1 - 4 * a2 * cq)) / (2 * a2),
                                           (-b1 - math.sqrt(b1 * b1 - 4 * a2 * cq)) / (2 * a2)) if r > 0)
                phi = roots[0]
            self.Q[c] += psi(sigma_r * phi, phi * mu)
        shrunk = [[j, phi * a] for j, a in sv_prime]
        self.sv[c] = shrunk[1:]
        ev.append((t, c, 2, r))
        ev.append((t, c, 1, i))

    # Orabona, Keshet & Caputo (2009), Figure 1 (Projectron) and Figure 2 (Projectron++)
    def _projectron(self, c, t, i, y, yf, u, ev, plus=False):
        sv = self.sv[c]
        margin_err = plus and 0 < yf < 1
        if not (yf <= 0 or margin_err):
            return
        m = len(sv)
        G = np.array([[self.K(a, b) for b, _ in sv] for a, _ in sv]).reshape(m, m)
        k = np.array([self.K(j, i) for j, _ in sv])
        d = np.linalg.solve(G, k) if m else np.zeros(0)
        delta2 = self.K(i, i) - float(k @ d)
        delta = math.sqrt(max(delta2, 0.0))
        if yf <= 0:
            if delta > self.eta and m < self.B:
                sv.append([i, float(y)])
                ev.append((t, c, 1, i))
            elif m > 0:
                for q in range(m):
                    sv[q][1] += y * d[q]
                ev.append((t, c, 3, i))
        else:
            pk2 = float(k @ d)
            if pk2 > 0:
                loss = 1 - yf
                beta = min(loss / pk2, 2 * (loss - delta / self.eta) / pk2, 1.0)
                if beta > 0:
                    for q in range(m):
                        sv[q][1] += y * beta * d[q]
                    ev.append((t, c, 4, i))

    def _projectronpp(self, c, t, i, y, yf, u, ev):
        self._projectron(c, t, i, y, yf, u, ev, plus=True)

    # Kivinen, Smola & Williamson (2004), §III: f <- (1 - eta_t lambda) f + eta_t y k(x_t, .) if y f < rho
    def _norma(self, c, t, i, y, yf, u, ev):
        eta_t = self.eta if self.schedule == "constant" else self.eta / math.sqrt(t + 1)
        sv = [[j, (1 - eta_t * self.lam) * a] for j, a in self.sv[c]]
        if yf < self.rho:
            if len(sv) == self.B:  # truncation: keep the tau most recent terms
                j, _ = sv.pop(0)
                ev.append((t, c, 2, j))
            sv.append([i, eta_t * y])
            ev.append((t, c, 1, i))
        self.sv[c] = sv
