"""The sweep: a sampler proposes, a trial measures, the store keeps, until a budget ends it.

:class:`Sweep` is the coordinator (``_loop``): it asks the sampler for a config per free
worker, hands it over, stores and tells each outcome, and asks the budgets whether to
stop.  Each step it hands off is a module here:

- ``_optuna``: the Optuna study rebuilt from the journal at every start, so a resumed
  sweep never measures a finished config again and the sampler sees every past result;
- ``_budget``: the stop rules (Ctrl-C, trial and time budgets, patience, target);
- ``_workers``: what measures a trial, one worker per GPU: in this process, or
  (``_process``, ``_worker_main``) a persistent process whose crash or hang costs only
  its trial; a worker process hands its records back through a ``_relay``, so only the
  coordinator writes the journal;
- ``_claims``: for ``sweeper worker``, each config claimed from the store before it is
  measured and recorded through the claim, so workers on any hosts keep it once;
- ``_compile_ahead``, ``_compile_pool``, ``_compile_main``: processes that compile the
  configs a sampler will propose next (its ``upcoming``) while the GPU measures;
- ``_watchdog``: in this process, a trial past ``measure.timeout`` recorded as timed out;
- ``_bench``: measuring a config, with ``_buffers`` (the inputs, kept per problem),
  ``_baselines`` (torch's, once per problem), ``_replay`` (a recorded result instead),
  ``_limits`` (bounds and ceilings; beyond them, re-verified and re-timed) and
  ``_power`` (the duty schedule of a power-bound study);
- ``_drift``: a one-at-a-time sweep's baseline measured again at the end;
- ``_finals``: each problem's finalists measured again, interleaved, to name its winner;
  with several GPUs on each of them, read together by :mod:`sweeper.consensus`;
- ``_summary``: what the sweep tells the outside (progress, the summary).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sweeper._lazy import lazy
from sweeper.study import enumerate_choices, open_study

if TYPE_CHECKING:
    from sweeper.sweep._budget import StopFlag
    from sweeper.sweep._loop import Sampling, Sweep
    from sweeper.sweep._summary import Reporter, SilentReporter, SweepSummary

#: Names imported on first use: the loop imports torch and optuna, which a compile
#: process (``_compile_main``) and a run starting its compile pool early never need.
__getattr__ = lazy(__name__, {
    "StopFlag": "._budget", "Sampling": "._loop", "Sweep": "._loop", "Reporter": "._summary",
    "SilentReporter": "._summary", "SweepSummary": "._summary"})


__all__ = ["Reporter", "Sampling", "SilentReporter", "StopFlag", "Sweep", "SweepSummary",
           "enumerate_choices", "open_study"]
