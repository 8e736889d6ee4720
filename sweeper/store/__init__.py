"""Store: the study on disk, append-only and resumable."""

from sweeper.store._records import BaselineRecord, TrialRecord, config_dict
from sweeper.store._study import JOURNAL, META, StudyStore

__all__ = ["JOURNAL", "META", "BaselineRecord", "StudyStore", "TrialRecord", "config_dict"]
