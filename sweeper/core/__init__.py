"""The core: the values everything else is made of, importing nothing of sweeper's above it.

A space's model once parsed (:class:`Space`, its :class:`Axis` values, a resolved
:class:`Config`, :class:`MeasureSpec`), a problem and its dimensions (:class:`Problem`,
:class:`Dim`), the safe expressions grids and constraints are written in
(:class:`Expr`), sizes, durations and dtypes (``_units``), study names (``_names``), how
a message names an option (``_spelling``: ``--studies-dir`` or ``studies_dir``) and the
facts of the GPU a space is resolved for (:class:`DeviceFacts`).
Kernels, devices, bounds and the plugin registry are built on this; the space parser
(:mod:`sweeper.space`) sits above them, as it asks the registry for kernels."""

from sweeper.core._bulk import bulk
from sweeper.core._expr import Expr, cdiv, evaluate, parse
from sweeper.core._facts import INTERPRETER, DeviceFacts
from sweeper.core._model import (
    THREAD_BLOCKS,
    WARP_BLOCKS,
    Axis,
    AxisRole,
    Budget,
    Config,
    Constraint,
    Invalid,
    LaunchShape,
    MeasureSpec,
    Origin,
    SamplerSpec,
    Shrunk,
    Space,
    Tie,
    Value,
    grid_labels,
    launch_text,
    shrunk_problems,
    warmup_turns,
)
from sweeper.core._problem import Dim, Problem, Shape, shape_of, show_dims
from sweeper.core._units import DECLARED_ONLY, DTYPES, format_size, parse_duration, parse_size

__all__ = [
    "DECLARED_ONLY",
    "DTYPES",
    "INTERPRETER",
    "THREAD_BLOCKS",
    "WARP_BLOCKS",
    "Axis",
    "AxisRole",
    "Budget",
    "Config",
    "Constraint",
    "DeviceFacts",
    "Dim",
    "Expr",
    "Invalid",
    "LaunchShape",
    "MeasureSpec",
    "Origin",
    "Problem",
    "SamplerSpec",
    "Shape",
    "Shrunk",
    "Space",
    "Tie",
    "Value",
    "bulk",
    "cdiv",
    "evaluate",
    "format_size",
    "grid_labels",
    "launch_text",
    "parse",
    "parse_duration",
    "parse_size",
    "shape_of",
    "show_dims",
    "shrunk_problems",
    "warmup_turns",
]
