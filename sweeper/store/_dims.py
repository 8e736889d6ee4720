"""Dimensions for problems a journal recorded by their footprint alone.

A journal written before kernels declared dimensions keeps each problem as a dtype and a
footprint.  Read now, each such problem gets the dimensions the study's kernel derives
from its footprint (``Kernel.dims_from_footprint``: ``n`` for copy and add, the square
side for matmul), so records old and new key, report and export alike.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from sweeper import plugins
from sweeper.core._problem import default_shape
from sweeper.errors import SweeperError
from sweeper.space import Config, Shape, shape_of
from sweeper.store._codec import ProblemKey
from sweeper.store._records import BaselineRecord


def study_shape(meta: dict[str, Any]) -> Shape:
    """The shape the study's kernel declares, read without importing a user kernel (whose
    stand-in, like any kernel that declares none, has the 1-D shape)."""
    try:
        return shape_of(plugins.kernel_declaration(str(meta.get("kernel")), user_code=False))
    except SweeperError:
        return default_shape()


def complete_dims(records: Sequence[Any], meta: Callable[[], dict[str, Any]]) -> None:
    """Give every problem in ``records`` that has no dimensions those the study's kernel
    (read from ``meta()`` only if one is missing) derives from its footprint; a footprint
    that gives none stays as it is."""
    shape: Shape | None = None
    for record in records:
        for f in dataclasses.fields(record):
            value = getattr(record, f.name)
            missing = (isinstance(value, Config) and not value.problem.dims) or (
                isinstance(value, ProblemKey) and not value.dims and value.dtype) or (
                isinstance(record, BaselineRecord) and f.name == "dims" and not value)
            if not missing:
                continue
            shape = shape or _shape(meta)
            setattr(record, f.name, _completed(record, value, shape))


def _shape(meta: Callable[[], dict[str, Any]]) -> Shape:
    try:
        return study_shape(meta())
    except SweeperError:            # a journal read without its study.json (tests, repair)
        return default_shape()


def _completed(record: Any, value: Any, shape: Shape) -> Any:
    if isinstance(value, ProblemKey):
        return value.completed(shape)
    if isinstance(value, Config):
        key = ProblemKey.of(value).completed(shape)
        return dataclasses.replace(value, problem=key.problem)
    key = ProblemKey(record.dtype, record.footprint, record.cache).completed(shape)
    return dict(key.dims)
