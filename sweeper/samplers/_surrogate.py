"""A small Gaussian-process surrogate over ordinal axes, for ``auto``.

Every axis is placed on [0, 1] by its position in the space file's list of values
(powers of two and grid multiples are listed in order, so neighbouring values sit
close), and the model is fitted to the log of the throughput: a config twice as fast
is the same step anywhere in the space.  The kernel is a Matérn-5/2 with one length
scale per axis (an axis that does not matter gets a long one), fitted by maximizing
the marginal likelihood.  Candidates are the whole list of valid, unmeasured configs,
so the acquisition is exact, with no continuous relaxation and rounding.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.linalg import cho_factor, cho_solve
from scipy.optimize import minimize
from scipy.stats import norm

#: Log length scales are searched in [exp(-3), exp(2)] of the unit axis.
LOG_SCALE_BOUNDS = (-3.0, 2.0)
#: The noise variance as a fraction of the (standardized) signal variance.
NOISE = 1e-3
#: The length scales are fitted on at most this many points (the best half of them and
#: an even spread of the rest); the fit's cost grows as the cube of its points, and
#: the posterior is still conditioned on every point.
FIT_POINTS = 128


def _matern52(a: np.ndarray, b: np.ndarray, scales: np.ndarray) -> np.ndarray:
    a, b = a / scales, b / scales
    # |a - b|² as |a|² + |b|² - 2 a·b: an m × n product, not an m × n × d difference
    d2 = (a * a).sum(1)[:, None] + (b * b).sum(1)[None, :] - 2.0 * (a @ b.T)
    s5 = math.sqrt(5.0) * np.sqrt(np.maximum(d2, 0.0))
    k: np.ndarray = (1.0 + s5 + s5 * s5 / 3.0) * np.exp(-s5)
    return k


class OrdinalGP:
    """Fit on points ``x`` (n × d, in [0, 1]) with values ``y``; predict mean and std."""

    def __init__(self, x: np.ndarray, y: np.ndarray) -> None:
        self.x = np.asarray(x, dtype=float)
        y = np.asarray(y, dtype=float)
        self.mu, self.sd = float(y.mean()), float(y.std()) or 1.0
        self.y = (y - self.mu) / self.sd
        self.scales = self._fit()
        k = _matern52(self.x, self.x, self.scales) + NOISE * np.eye(len(self.x))
        self._chol = cho_factor(k, lower=True)
        self._alpha = cho_solve(self._chol, self.y)

    def _nll(self, log_scales: np.ndarray, rows: np.ndarray | None = None
             ) -> tuple[float, np.ndarray]:
        """The negative log marginal likelihood of the points ``rows`` (default: all) and
        its gradient in the log scales."""
        x, y = (self.x, self.y) if rows is None else (self.x[rows], self.y[rows])
        scales = np.exp(log_scales)
        diff2 = ((x[:, None, :] - x[None, :, :]) / scales) ** 2   # n × n × d
        s5 = math.sqrt(5.0) * np.sqrt(diff2.sum(-1))
        decay = np.exp(-s5)
        k = (1.0 + s5 + s5 * s5 / 3.0) * decay + NOISE * np.eye(len(x))
        try:
            chol = cho_factor(k, lower=True)
        except np.linalg.LinAlgError:
            return 1e10, np.zeros_like(log_scales)
        alpha = cho_solve(chol, y)
        nll = float(0.5 * y @ alpha + np.log(np.diag(chol[0])).sum())
        # dk/dlog(scale_d) = 5/3 (1 + sqrt5 r) exp(-sqrt5 r) ((x_d - x'_d) / scale_d)^2
        inner = cho_solve(chol, np.eye(len(x))) - np.outer(alpha, alpha)
        weight = inner * (5.0 / 3.0) * (1.0 + s5) * decay
        return nll, 0.5 * np.einsum("ij,ijd->d", weight, diff2)

    def _fitted_rows(self) -> np.ndarray | None:
        """The points the length scales are fitted on: all (None) up to ``FIT_POINTS``,
        else the best half of that many and the rest spread evenly over the others."""
        n = len(self.y)
        if n <= FIT_POINTS:
            return None
        order = np.argsort(-self.y, kind="stable")
        top = FIT_POINTS // 2
        rest = order[top:][np.linspace(0, n - top - 1, FIT_POINTS - top).round().astype(int)]
        return np.sort(np.concatenate([order[:top], rest]))

    def _fit(self) -> np.ndarray:
        dims = self.x.shape[1]
        rows = self._fitted_rows()
        fits = [minimize(self._nll, np.full(dims, start), args=(rows,), method="L-BFGS-B",
                         jac=True, bounds=[LOG_SCALE_BOUNDS] * dims)
                for start in (-1.0, 0.0)]
        best = min(fits, key=lambda res: res.fun)      # the first of equal fits
        scales: np.ndarray = np.exp(best.x)
        return scales

    def predict(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The posterior mean and standard deviation at each row of ``x``, in the units
        of the ``y`` fitted (the noise left out: what the function is, not a sample)."""
        ks = _matern52(np.asarray(x, dtype=float), self.x, self.scales)
        mean = ks @ self._alpha
        v = cho_solve(self._chol, ks.T)
        var = np.maximum(1.0 - (ks * v.T).sum(1), 1e-12)
        return mean * self.sd + self.mu, np.sqrt(var) * self.sd


#: The least chance of running a config is given, however many failed around it: a
#: gain there still ranks above none.
FEASIBLE_FLOOR = 0.02
#: The length scale (of the unit axis) the chance of running is learnt at while no config
#: has run (nothing to fit one on): the first of the fit's starting points.
FEASIBLE_SCALE = math.exp(-1.0)


def feasibility(ran: np.ndarray, failed: np.ndarray, candidates: np.ndarray) -> np.ndarray:
    """Each candidate's chance of running (not failing), from the configs that ran
    (positions ``ran``) and those that failed (``failed``): one minus the mean of a
    Gaussian process of failure (1 for each that failed, 0 for each that ran) whose prior
    is that a config runs, so the chance is near 0 beside a failure and 1 far from every
    failure (the constrained expected improvement of Gardner et al., 2014, with a
    regression for its classifier); within [``FEASIBLE_FLOOR``, 1].  The length scales
    are those a process fits to the two kinds, or ``FEASIBLE_SCALE`` while none ran.  All
    1 while nothing failed."""
    if not len(failed):
        return np.ones(len(candidates))
    x = np.vstack([ran.reshape(-1, failed.shape[1]), failed])
    fails = np.concatenate([np.zeros(len(x) - len(failed)), np.ones(len(failed))])
    scales = OrdinalGP(x, fails).scales if len(failed) < len(x) else \
        np.full(x.shape[1], FEASIBLE_SCALE)
    k = _matern52(x, x, scales) + NOISE * np.eye(len(x))
    weights = cho_solve(cho_factor(k, lower=True), fails)
    chance: np.ndarray = np.clip(1.0 - _matern52(candidates, x, scales) @ weights,
                                 FEASIBLE_FLOOR, 1.0)
    return chance


def expected_improvement(mean: np.ndarray, std: np.ndarray, best: float) -> np.ndarray:
    """How much each candidate of normal ``mean`` and ``std`` is expected to exceed
    ``best``: it weighs a likely small gain against an unlikely large one, so a search
    both exploits and explores."""
    z = (mean - best) / std
    gain: np.ndarray = (mean - best) * norm.cdf(z) + std * norm.pdf(z)
    return gain


def model_slope(guess: np.ndarray, y: np.ndarray, every_guess: np.ndarray,
                weight: float) -> float:
    """The slope of measured ``y`` on a model's ``guess`` (both logs), by least squares
    pulled towards 1: the model's claim that its guesses scale as the throughput does
    counts as ``weight`` configs spread as the guesses over the whole space
    (``every_guess``) are.  With no spread in the guesses, 1."""
    prior = weight * float(np.var(every_guess))
    dg, dy = guess - guess.mean(), y - y.mean()
    denominator = float(dg @ dg) + prior
    return 1.0 if denominator == 0 else (float(dg @ dy) + prior) / denominator
