"""Store: a study kept append-only and resumable, whatever holds it.

:class:`Storage` (``_base``) is what every command asks of a study: its metadata, its
records in the order appended, and the claims workers take on configs.  Two backends
implement it: :class:`StudyStore` (``_study``), ``study.json`` and the fsynced journal
``trials.jsonl`` in the study's folder (``_journal`` reads and repairs it; ``_claims_file``
keeps claims beside it), and ``PostgresStore`` (``_postgres``), a database shared by
workers on many hosts.  ``_open`` picks one from ``--storage`` and copies a study between
them.  What a record holds is ``_records``; how it is checked, read and written back is
``_schema`` (by msgspec) and ``_codec``; what the records must be together (one trial a number and a
config, each within the study's axes) is ``_ledger``; ``_upgrade`` reads what older
sweepers wrote as the current format, the one place that knows them.
"""

from sweeper.store._base import Storage
from sweeper.store._claims_file import Claim
from sweeper.store._codec import ProblemKey
from sweeper.store._journal import JOURNAL, REJECTED, BadLine
from sweeper.store._meta import StudyMeta
from sweeper.store._records import (
    BaselineRecord,
    DriftRecord,
    DutyRecord,
    FirstMeasurement,
    GpuSlot,
    TrialRecord,
    key_of,
)
from sweeper.store._schema import FORMAT, Record
from sweeper.store._study import META, StudyStore

__all__ = ["FORMAT", "JOURNAL", "META", "REJECTED", "BadLine", "BaselineRecord", "Claim",
           "DriftRecord", "DutyRecord", "FirstMeasurement", "GpuSlot", "ProblemKey", "Record",
           "Storage", "StudyMeta", "StudyStore", "TrialRecord", "key_of"]
