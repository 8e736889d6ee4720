"""A JSON Schema for space files, built from the parser's own tables so it cannot drift.

``sweeper schema`` prints it; point an editor's YAML language server at it to get
completion and checking while writing a space.  The parser stays the authority: it
also checks what a schema cannot (expressions, powers of two, dependency cycles).
"""

from __future__ import annotations

from typing import Any

from sweeper import plugins
from sweeper.core._model import CACHE_MODES, MAX_THREADS, THREAD_BLOCKS, WARP_BLOCKS, LaunchShape
from sweeper.core._units import DTYPE_ALIASES, DTYPES
from sweeper.space._files import TOP_KEYS
from sweeper.space._parser import (
    BUDGET,
    CONDITIONAL_KEYS,
    MAX_SEED,
    MEASURE,
    SAMPLER_KEYS,
    VALUE_FORMS,
    Setting,
)

SCALAR = {"type": ["integer", "string"]}
#: A plugin that is not built in: an installed entry point's name, or module:attr.
PLUGIN = {"type": "string", "minLength": 1, "maxLength": 200,
          "description": "an installed plugin's entry point name, or package.module:attr"}
FROM_AUTOTUNE = {**PLUGIN, "description": "instead of kernel: a sweeper.kernel naming a "
                 "@triton.autotune function; its configs become a zipped group of axes"}
#: What a file that extends none gives: a kernel and its params, or from_autotune alone.
REQUIRED = {"anyOf": [{"required": ["kernel", "params"]}, {"required": ["from_autotune"]}]}
SEED = {"type": "integer", "minimum": 0, "maximum": MAX_SEED}


def _closed(properties: dict[str, Any], *required: str) -> dict[str, Any]:
    """A mapping of no keys but those of ``properties``, the ``required`` ones needed."""
    out: dict[str, Any] = {"type": "object", "additionalProperties": False}
    if required:
        out["required"] = list(required)
    return {**out, "properties": properties}


def _settings(table: dict[str, Setting]) -> dict[str, Any]:
    return _closed({key: setting.schema for key, setting in table.items()})


def _values(value: dict[str, Any]) -> list[dict[str, Any]]:
    pair = {"type": "array", "items": {"type": ["integer", "string"]}}
    return [
        value, {"type": "array", "items": value, "minItems": 1},
        *(_closed({key: {**pair, "minItems": least, "maxItems": most}}, key)
          for key, (least, most, _) in VALUE_FORMS.items()),
    ]


def _axis(value: dict[str, Any], conditional: bool = True) -> dict[str, Any]:
    forms = _values(value)
    if conditional:     # {values: ..., when: "expression"}: varies only when it holds
        values, when = CONDITIONAL_KEYS
        forms.append(_closed({values: {"anyOf": _values(value)}, when: {"type": "string"}},
                             *CONDITIONAL_KEYS))
    return {"anyOf": forms}


ZIP = {"type": "object", "additionalProperties": False, "required": ["zip"],
       "description": "axes that move together: {zip: {AXIS: [...], AXIS: [...]}}",
       "properties": {"zip": {"type": "object", "minProperties": 2,
                              "additionalProperties": {"type": "array", "minItems": 1}}}}


def _kernel() -> dict[str, Any]:
    """``kernel:``: a name, or a mapping of the name and the options the kernel declares."""
    names = {"anyOf": [{"enum": list(plugins.KERNEL.builtins)}, PLUGIN]}
    return {"anyOf": [names, {
        "type": "object", "required": ["name"], "description": "a kernel and the options "
        "it declares, such as {name: torch-op, op: torch.nn.functional.gelu}",
        "properties": {"name": names},
        "additionalProperties": {"anyOf": [
            {"type": "string", "minLength": 1, "maxLength": 200},
            {"type": "number"}, {"type": "object"}, {"type": "array"}]}}]}


def _block(shape: LaunchShape) -> dict[str, Any]:
    """The ``block`` axis of a kernel whose launch takes ``shape``'s blocks."""
    value = {"enum": list(shape.sizes)} if shape.sizes is not None else \
        {"type": "integer", "minimum": 1, "maximum": MAX_THREADS}
    return {**_axis(value), "description": f"threads per program: {shape.text}"}


def _blocks_by_kernel() -> list[dict[str, Any]]:
    """Where ``kernel:`` names a built-in (by name, or in a mapping), its ``block`` axis
    as its declaration's launch takes it (:attr:`Kernel.launch_shape`), and
    ``from_autotune:``'s as a Triton kernel's: any other kernel (a plugin, a
    ``module:attr``) is not imported, and takes what any launch takes."""
    groups: dict[LaunchShape, list[str]] = {}
    for name in plugins.KERNEL.builtins:
        groups.setdefault(plugins.kernel_declaration(name).launch_shape, []).append(name)
    out = []
    for shape, names in groups.items():
        named = {"anyOf": [{"enum": names}, {"type": "object", "required": ["name"],
                                             "properties": {"name": {"enum": names}}}]}
        out.append({"if": {"required": ["kernel"], "properties": {"kernel": named}},
                    "then": {"properties": {"params": {"properties": {
                        "block": _block(shape)}}}}})
    out.append({"if": {"required": ["from_autotune"]},
                "then": {"properties": {"params": {"properties": {
                    "block": _block(WARP_BLOCKS)}}}}})
    return out


def space_schema() -> dict[str, Any]:
    """The space file's JSON Schema; a file that extends another may omit kernel and params."""
    meta = {param: {**_axis(SCALAR), "description": f"{name}: {spec.doc}"}
            for name in plugins.KERNEL.builtins
            for param, spec in plugins.kernel_declaration(name).meta_params.items()}
    params = {
        "grid": {**_axis(SCALAR), "description": "programs launched (an expression may read "
                 "sms, l2_bytes, n, itemsize and other axes)"},
        "block": _block(THREAD_BLOCKS),
        "dtype": _axis({"enum": [*DTYPES, *DTYPE_ALIASES]}, conditional=False),
        "footprint": {**_axis(SCALAR), "description": "bytes, e.g. 64MiB"},
        "cache": _axis({"enum": list(CACHE_MODES)}, conditional=False),
        **meta,
    }
    sampler_names = {"anyOf": [{"enum": list(plugins.SAMPLER.builtins)}, PLUGIN]}
    properties: dict[str, Any] = {
        "study": {"type": "string"}, "extends": {"type": "string"},
        "kernel": _kernel(),
        "from_autotune": FROM_AUTOTUNE,
        "sampler": {"anyOf": [sampler_names, _closed({
            "name": sampler_names, "seed": SEED,
            "baseline": {"type": "object", "additionalProperties": SCALAR}})]},
        "seed": SEED,
        "params": {"type": "object", "properties": params,
                   "additionalProperties": {"anyOf": [ZIP, _axis(SCALAR)]}},
        "constraints": {"type": "array", "items": {"type": "string"}},
        "measure": _settings(MEASURE), "budget": _settings(BUDGET),
    }
    assert set(properties) == set(TOP_KEYS)
    assert set(properties["sampler"]["anyOf"][1]["properties"]) == set(SAMPLER_KEYS)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "sweeper space file", "type": "object", "additionalProperties": False,
        "properties": properties,
        "if": {"not": {"required": ["extends"]}}, "then": REQUIRED,
        "allOf": _blocks_by_kernel(),
    }
