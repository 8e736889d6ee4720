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


def _matern52(a: np.ndarray, b: np.ndarray, scales: np.ndarray) -> np.ndarray:
    d = np.sqrt(np.maximum(((a[:, None, :] - b[None, :, :]) / scales) ** 2, 0).sum(-1))
    s5 = math.sqrt(5.0) * d
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

    def _nll(self, log_scales: np.ndarray) -> tuple[float, np.ndarray]:
        """The negative log marginal likelihood and its gradient in the log scales."""
        scales = np.exp(log_scales)
        diff2 = ((self.x[:, None, :] - self.x[None, :, :]) / scales) ** 2   # n × n × d
        s5 = math.sqrt(5.0) * np.sqrt(diff2.sum(-1))
        decay = np.exp(-s5)
        k = (1.0 + s5 + s5 * s5 / 3.0) * decay + NOISE * np.eye(len(self.x))
        try:
            chol = cho_factor(k, lower=True)
        except np.linalg.LinAlgError:
            return 1e10, np.zeros_like(log_scales)
        alpha = cho_solve(chol, self.y)
        nll = float(0.5 * self.y @ alpha + np.log(np.diag(chol[0])).sum())
        # dk/dlog(scale_d) = 5/3 (1 + sqrt5 r) exp(-sqrt5 r) ((x_d - x'_d) / scale_d)^2
        inner = cho_solve(chol, np.eye(len(self.x))) - np.outer(alpha, alpha)
        weight = inner * (5.0 / 3.0) * (1.0 + s5) * decay
        return nll, 0.5 * np.einsum("ij,ijd->d", weight, diff2)

    def _fit(self) -> np.ndarray:
        dims = self.x.shape[1]
        fits = [minimize(self._nll, np.full(dims, start), method="L-BFGS-B", jac=True,
                         bounds=[LOG_SCALE_BOUNDS] * dims) for start in (-1.0, 0.0)]
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
