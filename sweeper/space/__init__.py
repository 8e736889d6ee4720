"""The search space: parsed once from YAML into frozen dataclasses."""

from sweeper.space._configs import Configs
from sweeper.space._expr import Expr, cdiv, evaluate, parse
from sweeper.space._load import autotune_space, load_space, parse_space
from sweeper.space._model import (
    Axis,
    AxisRole,
    Budget,
    Config,
    Constraint,
    Invalid,
    MeasureSpec,
    Origin,
    SamplerSpec,
    Space,
    Tie,
    Value,
)
from sweeper.space._problem import Dim, Problem, Shape, shape_of, show_dims
from sweeper.space._units import DECLARED_ONLY, DTYPES, format_size, parse_duration, parse_size

__all__ = [
    "DECLARED_ONLY",
    "DTYPES",
    "Axis",
    "AxisRole",
    "Budget",
    "Config",
    "Configs",
    "Constraint",
    "Dim",
    "Expr",
    "Invalid",
    "MeasureSpec",
    "Origin",
    "Problem",
    "SamplerSpec",
    "Shape",
    "Space",
    "Tie",
    "Value",
    "autotune_space",
    "cdiv",
    "evaluate",
    "format_size",
    "load_space",
    "parse",
    "parse_duration",
    "parse_size",
    "parse_space",
    "shape_of",
    "show_dims",
]
