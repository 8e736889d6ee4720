"""The Python API: :func:`run` a sweep as ``sweeper run`` does, :func:`load_study` a
recorded one, and ask the :class:`Study` for its trials (pandas), winners, baselines,
report and exports.  ``import sweeper`` makes these ``sweeper.run``,
``sweeper.load_study`` and ``sweeper.Study``, imported when first used."""

from sweeper.api._run import run
from sweeper.api._study import Study, load_study

__all__ = ["Study", "load_study", "run"]
