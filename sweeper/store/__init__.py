"""Store: the study on disk, append-only and resumable."""

from sweeper.store._base import Storage
from sweeper.store._journal import JOURNAL, REJECTED, BadLine
from sweeper.store._records import (
    BaselineRecord,
    DriftRecord,
    DutyRecord,
    FirstMeasurement,
    GpuSlot,
    ProblemKey,
    TrialRecord,
)
from sweeper.store._schema import Record
from sweeper.store._study import META, StudyStore

__all__ = ["JOURNAL", "META", "REJECTED", "BadLine", "BaselineRecord", "DriftRecord",
           "DutyRecord", "FirstMeasurement", "GpuSlot", "ProblemKey", "Record", "Storage",
           "StudyStore", "TrialRecord"]
