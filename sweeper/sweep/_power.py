"""The power check (``measure.duty: auto``): is this study power-bound?

Until a trial shows it, configs are sampled back to back.  The first trial whose
sampling window shows the power cap (or board power near its limit) makes the study
power-bound: from then on the sweep measures under :data:`SUSTAINED` load (configs back
to back, as the kernel runs in production; a GPU that idled is loaded first), that trial
is measured again under it, and the finals decide each problem's winner after
:data:`DEFAULT_DUTY`'s cool-downs, or under the same sustained load
(``measure.finals_duty``, :meth:`Duty.for_finals`).  The switch is a
:class:`DutyRecord` in the journal, so a resumed study keeps the schedule (a study that
switched to ``DEFAULT_DUTY`` itself keeps that).  A space that names a schedule
(``cool``, ``load``) or ``off`` is never switched.
"""

from __future__ import annotations

from sweeper.devices import Device
from sweeper.measure import SUSTAINED, Duty, power_bound
from sweeper.space import MeasureSpec
from sweeper.store import DutyRecord, FirstMeasurement, TrialRecord
from sweeper.sweep._relay import Journal


class PowerCheck:
    """The duty schedule a study's samples follow now, and why (``note``)."""

    def __init__(self, measure: MeasureSpec, device: Device, store: Journal) -> None:
        self.auto = measure.duty == "auto"
        self.finals = measure.finals_duty
        self.device, self.store = device, store
        #: what precedes each config's samples: the space's schedule, else none until a
        #: trial shows the study power-bound
        self.duty: Duty | None = measure.fixed_duty()
        self.note = ""
        # a study found power-bound before goes on under the schedule it switched to
        found = store.read(DutyRecord)
        if self.duty is None and self.auto and found:
            self.duty = found[-1].duty
            self.note = found[-1].note

    def switches(self, number: int, record: TrialRecord) -> bool:
        """Does trial ``number`` (``record``) make the study power-bound?  If so, the
        schedule is switched and recorded, and the trial is to be measured again."""
        if self.duty is not None or not self.auto or not record.clocks:
            return False
        why = power_bound(record.clocks.reasons, record.clocks.power_w_max,
                          self.device.power_limit_w())
        if why is None:
            return False
        self.duty = SUSTAINED
        self.note = (f"power-bound from trial #{number} ({why}); from then on "
                     f"{SUSTAINED.describe()}, and the finals with "
                     f"{SUSTAINED.for_finals(self.finals).describe()} (measure.duty: auto)")
        self.store.append(DutyRecord(
            trial=number, reason=why, note=self.note, duty=SUSTAINED,
            first_measurement=FirstMeasurement(
                median_ms=record.stats.median if record.stats else None, clocks=record.clocks)))
        return True

    def finals_duty(self) -> Duty | None:
        """The schedule the finals' entrants follow (:meth:`Duty.for_finals`)."""
        return self.duty.for_finals(self.finals) if self.duty is not None else None
