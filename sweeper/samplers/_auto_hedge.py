"""A hedge for ``auto`` with a kernel model (issue 28): some proposals from TPE, the
share set by how wrong the model has measured.  Off by default (``HEDGE = 0``); the
switches are set by the benchmarks' ``--set`` (measured variants, docs/search.md).

- :func:`tpe_pick`: the proposal of a multivariate TPE (Optuna's, over the axes as
  categories) conditioned on every measured config, restricted to the valid configs
  not yet measured: the best ``TPE_GAMMA`` of the measurements against the rest, 24
  candidates drawn from the good density, the one with the highest ratio proposed.
- :class:`Hedge`: decides, proposal by proposal after the start, whether the model's
  path or TPE proposes.  ``HEDGE = 1``: a share of ``HEDGE_K`` × (1 − rho), rho the rank
  correlation of the model's guesses with the measured throughputs so far, at most
  ``HEDGE_MAX``, paid out deterministically (a credit that grows by the share each
  proposal; TPE proposes when it reaches 1).  ``HEDGE = 2``: EXP3 over the two sources,
  each rewarded 1 for a proposal that beat the best before it by ``MIN_GAIN``
  (importance-weighted), ``HEDGE_FLOOR`` of the draws uniform, the model's log weight
  starting ``HEDGE_BIAS`` ahead.  ``HEDGE = 3``: a constant share ``HEDGE_MAX``.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.stats import spearmanr

from sweeper.samplers._auto_state import MIN_GAIN, Key, SearchState, key_of

#: 0 off (today's search); 1 share from the rank error; 2 EXP3; 3 constant share.
HEDGE = 0
#: The share of TPE proposals per unit of (1 − rank correlation) (``HEDGE = 1``).
HEDGE_K = 1.0
#: The most of the proposals TPE gets (``HEDGE = 1`` and ``3``).
HEDGE_MAX = 0.5
#: EXP3: the share of the draws made uniformly between the two sources ...
HEDGE_FLOOR = 0.2
#: ... the learning rate on importance-weighted rewards ...
HEDGE_ETA = 0.5
#: ... and the model's head start in log weight.
HEDGE_BIAS = 1.0
#: TPE's share is 0 until this many configs are measured (``HEDGE`` 1 and 3).
HEDGE_AFTER = 4
#: How the model's error is measured (``HEDGE = 1``): 0 one minus the rank correlation;
#: 1 twice the share of pairs of measured configs, guessed more than ``HEDGE_GAP`` apart
#: in log, that measured in the other order (0 a right model, 1 a coin).
HEDGE_ERROR = 0
HEDGE_GAP = 0.2
#: TPE's first this many proposals are uniform among the valid unmeasured configs (as
#: Optuna's TPE starts with random ones), not conditioned on the model's measurements.
TPE_STARTUP = 0
#: TPE's good set: this fraction of the measured configs (at least one; Optuna's default
#: is 0.1, at most 25).
TPE_GAMMA = 0.1
#: TPE's candidates drawn from the good density.
TPE_CANDIDATES = 24


def tpe_pick(state: SearchState, unseen: list[Key]) -> Key:
    """The valid unmeasured config a multivariate TPE over ``state``'s measured configs
    proposes (seeded by ``state.rng``)."""
    if sum(1 for k in state.proposed_by_tpe if k in state.seen) < TPE_STARTUP:
        pick = state.rng.choice(unseen)
        state.proposed_by_tpe.add(pick)
        return pick
    axes = list(state.axes)
    sizes = np.array([len(state.axes[a]) for a in axes], dtype=float)
    index = {a: {label: i for i, label in enumerate(state.axes[a])} for a in axes}

    def codes(params: dict[str, str]) -> list[int]:
        return [index[a][params[a]] for a in axes]

    scored = sorted(((v, codes(p)) for p, v in state.scores
                     if v > 0 and all(params_ok(p, a, index) for a in axes)),
                    key=lambda item: -item[0])
    cand = np.array([codes(dict(k)) for k in unseen])
    n_good = max(1, min(math.ceil(TPE_GAMMA * len(scored)), 25))
    good = np.array([c for _, c in scored[:n_good]]).reshape(-1, len(axes))
    bad = np.array([c for _, c in scored[n_good:]]).reshape(-1, len(axes))
    log_l, log_g = _log_density(cand, good, sizes), _log_density(cand, bad, sizes)
    weights = np.exp(log_l - log_l.max())
    drawn = state.rng.choices(range(len(unseen)), weights=weights.tolist(), k=TPE_CANDIDATES)
    ratio = {i: float(log_l[i] - log_g[i]) for i in drawn}
    pick = unseen[max(drawn, key=lambda i: ratio[i])]
    state.proposed_by_tpe.add(pick)
    return pick


def params_ok(params: dict[str, str], axis: str, index: dict[str, dict[str, int]]) -> bool:
    """Whether ``params`` has a label of ``axis`` that the space lists."""
    return params.get(axis) in index[axis]


def _log_density(cand: np.ndarray, obs: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Log of a Parzen mixture at ``cand``: a uniform prior component and one product of
    categorical kernels per observation (weight (1 + 1/c) / 2 on its own label, 1/(2c)
    on each other of an axis of c labels), as Optuna's TPE with prior weight 1."""
    prior = -np.log(sizes).sum()
    if not len(obs):
        return np.full(len(cand), prior)
    same = cand[:, None, :] == obs[None, :, :]                       # m × n × d
    own, other = np.log((1 + 1 / sizes) / 2), np.log(1 / (2 * sizes))
    logk = np.where(same, own, other).sum(-1)                         # m × n
    parts = np.concatenate([logk, np.full((len(cand), 1), prior)], axis=1)
    top = parts.max(1, keepdims=True)
    density: np.ndarray = top[:, 0] + np.log(np.exp(parts - top).sum(1)) - np.log(parts.shape[1])
    return density


class Hedge:
    """Which source proposes next: the model's path or TPE (see the module)."""

    def __init__(self, state: SearchState, prior: dict[Key, float]) -> None:
        self.state, self.prior = state, prior
        self.credit = 0.0
        self.source: dict[Key, str] = {}          # proposed config -> "model" / "tpe"
        self.chance: dict[Key, float] = {}        # the chance its source had
        self.reward = {"model": HEDGE_BIAS / max(HEDGE_ETA, 1e-9), "tpe": 0.0}
        self._told = 0
        self._best = 0.0

    def share(self) -> float:
        """TPE's share now (``HEDGE`` 1 and 3)."""
        scored = [(self.prior[key_of(p)], v) for p, v in self.state.scores
                  if v > 0 and key_of(p) in self.prior]
        if len(scored) < HEDGE_AFTER:
            return 0.0
        if HEDGE == 3:
            return HEDGE_MAX
        if HEDGE_ERROR == 1:
            g = np.array([g for g, _ in scored])
            y = np.log([v for _, v in scored])
            apart = (g[:, None] - g[None, :]) > HEDGE_GAP
            pairs = int(apart.sum())
            wrong = int((apart & (y[:, None] < y[None, :])).sum())
            error = 0.0 if not pairs else 2.0 * wrong / pairs
        else:
            rho = spearmanr([g for g, _ in scored], [v for _, v in scored]).statistic
            error = 0.0 if not np.isfinite(rho) else 1.0 - float(rho)
        return min(HEDGE_MAX, max(0.0, HEDGE_K * error))

    def _learn(self) -> None:
        """EXP3's rewards for the configs measured since the last call."""
        for params, v in self.state.scores[self._told:]:
            key = key_of(params)
            if key in self.source and v > self._best * (1 + MIN_GAIN) and self._best > 0:
                self.reward[self.source[key]] += 1.0 / self.chance[key]
            self._best = max(self._best, v)
        self._told = len(self.state.scores)

    def tpe_turn(self) -> tuple[bool, float]:
        """Whether TPE proposes next, and the chance it had."""
        if HEDGE in (1, 3):
            p = self.share()
            self.credit += p
            if self.credit >= 1.0:
                self.credit -= 1.0
                return True, p
            return False, 1.0 - p
        self._learn()
        top = max(self.reward.values())
        w = {s: math.exp(HEDGE_ETA * (r - top)) for s, r in self.reward.items()}
        p = (1 - HEDGE_FLOOR) * w["tpe"] / sum(w.values()) + HEDGE_FLOOR / 2
        tpe = self.state.rng.random() < p
        return tpe, p if tpe else 1.0 - p

    def note(self, key: Key, source: str, chance: float) -> None:
        """``key`` was proposed by ``source``, drawn with ``chance``."""
        self.source[key], self.chance[key] = source, max(chance, 1e-3)
