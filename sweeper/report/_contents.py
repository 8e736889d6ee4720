"""What a report shows, computed once from a study (:func:`sweeper.report.study_tables`)
and read by each of its outputs: ``report.md``, ``report.json`` and the pictures."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

    from sweeper.ceilings import Ceilings
    from sweeper.consensus import Agreement
    from sweeper.finals import FinalRecord
    from sweeper.kernels import Headline
    from sweeper.report._footprint import FootprintCurve
    from sweeper.report._heatmaps import HeatmapData
    from sweeper.report._provenance import RunStory, SamplerShare
    from sweeper.report._roofline import Roofline
    from sweeper.report._tables import AxisEffect
    from sweeper.store import BaselineRecord, DriftRecord, ProblemKey, StudyMeta
    from sweeper.winners import EarlierShown


@dataclass(frozen=True)
class ReportTables:
    """Everything the report shows; problems in (dtype, footprint, dimensions, cache)
    order everywhere.  The tables are pandas frames of the trials (``frame``: one row a
    trial) and of what is drawn from them."""

    meta: StudyMeta
    frame: pd.DataFrame
    ceilings: Ceilings | None
    headline: Headline
    #: the rate column the report ranks and shows (``gbps``, ``tflops``...)
    metric: str
    story: RunStory
    baselines: list[BaselineRecord]
    #: each problem's pick: its final's winner, else the sweep's best
    picks: pd.DataFrame
    heatmaps: list[HeatmapData]
    best: pd.DataFrame
    failures: pd.DataFrame
    stops: pd.DataFrame
    flags: pd.DataFrame
    #: why nothing was measured, when nothing was
    unmeasured: str | None
    agreements: dict[ProblemKey, Agreement]
    #: problems whose finals are still to run
    unfinished: list[str]
    finals: list[tuple[FinalRecord, pd.DataFrame]]
    effects: list[AxisEffect]
    drift: list[DriftRecord]
    factors: dict[str, list[tuple[str, str]]]
    #: each sampler that proposed trials, with how many (several after a resume with
    #: ``--force`` that changed it)
    samplers: list[SamplerShare]
    #: trials whose sampling was cut short, and the GPU time that saved (ms)
    abandoned_trials: int
    abandoned_saved_ms: float
    power: dict[str, Any]
    footprint: list[FootprintCurve]
    roofline: Roofline | None
    #: the measurement record: (item, what was recorded)
    record: list[tuple[str, str]]
    #: the heatmaps' colour scale: one for the ``study``, per ``problem``, or per ``map``
    colour_scale: str = "study"
    #: trials measured on an earlier source of the kernel than the study's now (a resume
    #: with ``--force`` after an edit): no pick is chosen from them
    earlier_source: int = 0
    #: of ``earlier_source``, those that name no source where which one ran them is
    #: unknown (A, B, then A again): they may have run on the source now
    unknown_source: int = 0
    #: where no trial was measured on the source now yet, the one earlier source whose
    #: trials the tables and heatmaps show (:meth:`~sweeper.winners.Sources.shown_earlier`)
    earlier_shown: EarlierShown | None = None
