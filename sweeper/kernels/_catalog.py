"""What ``sweeper kernels`` lists: every kernel the registry knows, as declared.

A built-in is read from its declaration (``sweeper/kernels/_declared.py``), so listing
them imports no torch or triton; an installed entry point or a ``module:attr`` path is
its own class, its module imported (as ``run`` would).  One that cannot be loaded is
listed with the reason, never a traceback.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from sweeper import plugins
from sweeper.errors import SweeperError

#: Where a kernel of compiled CUDA C (``needs_gpu``) runs, and where any other does.
RUNS_ON_CUDA_C = ("compiled CUDA C (NVRTC, through cupy): a CUDA GPU only; without one, a "
                  "replay of a recorded table (--device replay:TABLE.csv)")
RUNS_ON = ("a CUDA GPU, the CPU through the Triton interpreter (--device interpret), or a "
           "replay of a recorded table (--device replay:TABLE.csv)")


@dataclass(frozen=True)
class KernelEntry:
    """One kernel as its declaration states it: what a space may sweep and what reports
    lead with; ``error`` instead of the rest for a kernel that could not be loaded."""

    name: str
    origin: str
    summary: str = ""
    #: name -> {"default", "pow2", "elements", "doc"}
    meta_params: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: option -> {"doc", "required", "default"}: what ``kernel: {name: ..., OPTION: ...}``
    #: gives it; an option without a default must be given
    options: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: name -> {"doc", "default", "min", "max", "multiple_of", "allowed"}
    dims: dict[str, dict[str, Any]] = field(default_factory=dict)
    footprint_bytes: str = ""
    #: dimension -> its expression over ``footprint`` and ``itemsize``; empty: the
    #: dimensions must be given
    dims_from_footprint: dict[str, str] = field(default_factory=dict)
    defaults: dict[str, Any] = field(default_factory=dict)
    headline: str = ""
    baseline: str | None = None
    #: the kernel is compiled CUDA C (the built-in ``cuda``, or a launch of ``sweeper.cuda``)
    cuda_c: bool = False
    #: the devices it runs on, in words
    runs_on: str = ""
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The entry as JSON-ready data (``sweeper kernels --json``)."""
        return asdict(self)


def describe(name: str) -> KernelEntry:
    """Kernel ``name``'s entry; a :class:`SweeperError` where the name leads nowhere or
    its plugin cannot be loaded."""
    found = plugins.find(plugins.KERNEL, name)
    cls = plugins.kernel_declaration(name)
    return KernelEntry(
        name=cls.name, origin=found.origin, summary=_summary(cls),
        meta_params={k: {"default": m.default, "pow2": m.pow2, "elements": m.elements,
                         "doc": m.doc} for k, m in cls.meta_params.items()},
        options={k: {"doc": doc, "required": k not in cls.option_defaults
                      and k not in cls.optional_options,
                      "default": cls.option_defaults.get(k)} for k, doc in cls.options.items()},
        dims={k: {"doc": d.doc, "default": d.default, "min": d.min, "max": d.max,
                  "multiple_of": d.multiple_of, "allowed": d.allowed()}
              for k, d in cls.dims.items()},
        footprint_bytes=cls.footprint_bytes,
        dims_from_footprint=dict(cls.dims_from_footprint or {}),
        defaults=dict(cls.defaults), headline=cls.headline.unit,
        baseline=cls.baseline_name, cuda_c=bool(getattr(cls, "needs_gpu", False)),
        runs_on=RUNS_ON_CUDA_C if getattr(cls, "needs_gpu", False) else RUNS_ON)


def _summary(cls: type) -> str:
    """The class's own ``summary``, else the first line of its own docstring (a subclass
    of a built-in says what it changes), else the ``summary`` it inherits."""
    own = cls.__dict__.get("summary") or (cls.__dict__.get("__doc__") or "").strip()
    return own.splitlines()[0] if own else getattr(cls, "summary", "")


def catalog(names: Sequence[str] = ()) -> list[KernelEntry]:
    """``names``' entries, each once in the order first given; without names, every
    built-in then every installed entry point (a name two distributions declare, or one
    that fails to load, is listed with its reason).  A name given that leads nowhere is a
    :class:`SweeperError`."""
    if names:
        return [describe(name) for name in dict.fromkeys(names)]
    listed = [*plugins.KERNEL.builtins,
              *(n for n in plugins.installed(plugins.KERNEL) if n not in plugins.KERNEL.builtins)]
    entries = []
    for name in listed:
        try:
            entries.append(describe(name))
        except SweeperError as err:
            entries.append(KernelEntry(name=name, origin="entry point", error=str(err)))
    return entries


def render(entry: KernelEntry) -> str:
    """An entry as ``sweeper kernels`` prints it: a heading line, then its parts indented,
    one meta-parameter or dimension a line."""
    head = f"{entry.name} ({entry.origin})"
    if entry.error is not None:
        return f"{head}\n  {entry.error}"
    lines = [f"{head}: {entry.summary}" if entry.summary else head, "  meta-parameters:"]
    lines += [f"    {k} = {m['default']}" + (", a power of two" if m["pow2"] else "") +
              (f": {m['doc']}" if m["doc"] else "") for k, m in entry.meta_params.items()]
    if not entry.meta_params:
        lines[-1] += " none"
    if entry.options:
        lines.append(f"  options (kernel: {{name: {entry.name}, OPTION: ...}}):")
        lines += [f"    {k} " + ("(required)" if o["required"] else "(optional)"
                                  if o["default"] is None else f"= {o['default']}") +
                  f": {o['doc']}" for k, o in entry.options.items()]
    lines.append("  dimensions:")
    lines += [f"    {k} = {'(no default)' if d['default'] is None else d['default']}: "
              f"{d['doc']}; {d['allowed']}" for k, d in entry.dims.items()]
    rule = ", ".join(f"{k} = {e}" for k, e in entry.dims_from_footprint.items())
    lines += [f"  footprint: {entry.footprint_bytes} bytes; " +
              (f"a footprint alone gives {rule}" if rule else
               "a footprint alone does not size it: give the dimensions"),
              "  defaults: " + ", ".join(f"{k} {v}" for k, v in entry.defaults.items()
                                         if rule or k != "footprint"),  # unused: dims size it
              f"  headline: {entry.headline}; baseline: {entry.baseline or 'none'}",
              f"  runs on: {entry.runs_on}"]
    return "\n".join(lines)
