"""``sweeper.kernel``: declare a kernel by its launch, its tensors and a reference.

It reads best as a decorator over the launch function: the launch is the one part that is
code rather than data, so it stays a plain ``def`` whose name names the kernel, and the
decorator's arguments read as the declaration above it::

    @sweeper.kernel(inputs={"x": "n"}, outputs=["x"], meta={"BLOCK": 1024},
                    reference=lambda x: x * 2.0)
    def scale(x, config):
        scale_kernel[(config.grid,)](x, x.numel(), 2.0, num_warps=config.num_warps,
                                     **config.meta)

``kernel(launch, ...)`` called with the function does the same.  Either returns a
:class:`~sweeper.kernels.Kernel` subclass, which a space names as ``module:attr``.
Every mistake in a declaration is a :class:`SweeperError` naming the kernel and the
argument, raised when its module is imported (the registry reports it with the path).
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import keyword
import numbers
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from sweeper.core import DTYPES, Config, Dim, Expr, evaluate, parse
from sweeper.core._api_errors import callers_frame, cut_at_call
from sweeper.core._model import FACT_NAMES, WARP_BLOCKS, LaunchShape
from sweeper.core._spelling import entry
from sweeper.core._units import canonical_dtype, defined_as, did_you_mean, whole
from sweeper.errors import ExpressionError, SweeperError, defined_at
from sweeper.escape import cut
from sweeper.kernels._autotune import autotune_declaration
from sweeper.kernels._base import Headline, MetaParam, OptionError
from sweeper.kernels._model_form import DeclaredModel, read_model
from sweeper.kernels._short import Count, Plan, ShortKernel, refuse_launch_args
from sweeper.kernels._tensors import (
    RESERVED,
    TOLERANCES,
    Factory,
    TensorSpec,
    output_specs,
    parsed,
    tensor_spec,
)


@dataclass(frozen=True)
class Declaration:
    """The arguments of :func:`kernel` but the launch; :meth:`build` makes the class."""

    inputs: Mapping[str, Any] | Factory
    outputs: Sequence[str] | Mapping[str, Any]
    reference: Callable[..., Any]
    name: str | None = None
    meta: Mapping[str, int | MetaParam] | None = None
    dims: Mapping[str, int | Dim] | None = None
    grid: str | int | None = None
    #: the grid in y and z, for a launch whose grid has them (``sweeper.cuda``'s)
    grid_y: str | int | None = None
    grid_z: str | int | None = None
    block: int | None = None
    dtype: str | None = None
    footprint_bytes: str | None = None
    bytes_moved: Count | None = None
    flops: Count | None = None
    baseline: Callable[..., Any] | None = None
    baseline_name: str | None = None
    tolerance: Mapping[str, tuple[float, float]] | None = None
    headline: Headline | str | None = None
    autotuned: Any = None
    model: Mapping[str, Any] | DeclaredModel | None = None
    refuse: Callable[[Config], str | None] | None = None
    #: the outputs compared with the reference's (``None``: every one); what is checked,
    #: not what runs, so no part of a ``__main__`` kernel's source (:func:`_unfiled`)
    check: Sequence[str] | None = field(default=None, repr=False)
    #: the user's comparison in place of the tolerance check; a ``__main__`` kernel's
    #: source holds the code it reaches (:func:`_unfiled`), not its repr, so that a
    #: kernel declared without it keeps the hash it had before ``verify=`` was
    verify: Callable[[dict[str, Any], dict[str, Any]], object] | None = field(
        default=None, repr=False)
    #: the module whose code called :func:`kernel` (``None``: not known): where it is
    #: another of the user's modules than the launch's, its text heads the kernel's
    #: source (:func:`_source`), so that an edit of the declaration (its ``reference=``)
    #: is a new version too; no part of a ``__main__`` kernel's source (:func:`_unfiled`)
    declared_in: str | None = field(default=None, repr=False, compare=False)

    def build(self, launch: Callable[..., Any]) -> type[ShortKernel]:
        """The :class:`ShortKernel` subclass that launches with ``launch``."""
        attrs = self.attributes(launch)
        return type(f"Short_{attrs['name'].replace('-', '_')}", (ShortKernel,), attrs)

    def attributes(self, launch: Callable[..., Any], *, sourced: bool = True
                   ) -> dict[str, Any]:
        """The class attributes :meth:`build` gives the kernel, each part checked; without
        ``sourced``, its source (what identifies its version) left unread."""
        if not callable(launch):
            raise SweeperError(f"sweeper.kernel: launch must be a function (tensors..., "
                               f"config), got {type(launch).__name__}")
        if self.name is not None and not isinstance(self.name, str):
            raise SweeperError(f"sweeper.kernel: name={self.name!r} is not a name; allowed: "
                               "text, such as name='scale'"[:400])
        self.refuse_triton_launch(launch)
        name = self.name or launch.__name__
        if not isinstance(name, str) or not name or name == "<lambda>":
            raise SweeperError("sweeper.kernel: give name= (a lambda has none)")
        shape = getattr(launch, "launch_shape", WARP_BLOCKS)   # sweeper.cuda's threads
        attrs: dict[str, Any] = {"name": name, **self.declares(name, shape=shape)}
        plan = attrs["plan"] = self.plan(name, launch, tuple(attrs["dims"]), sourced=sourced)
        if isinstance(plan.inputs, Mapping):    # a factory's: checked as it makes them
            refuse_launch_args(name, plan, (*plan.inputs, *(
                n for n, spec in plan.outputs.items() if spec is not None)),
                tuple(attrs["dims"]), tuple(attrs["meta_params"]))
        reserved = getattr(launch, "meta_problem", None)     # sweeper.cuda's defines
        found = reserved(tuple(attrs["meta_params"])) if callable(reserved) else None
        if found is not None:
            raise SweeperError(f"kernel {name}: meta: {found[0]}: {found[1]}")
        if self.baseline is not None and not callable(self.baseline):
            raise SweeperError(f"kernel {name}: baseline= must be a function of the tensors "
                               f"doing the same work in torch, got {self.baseline!r}"[:300])
        _check_calls(name, attrs["plan"])
        for key in CALLED:
            _check_called(name, key, getattr(self, key))
        attrs["baseline_name"] = None if self.baseline is None else \
            self.baseline_name or "torch"
        attrs["headline"] = _headline(name, self.headline)
        attrs["needs_gpu"] = bool(getattr(launch, "needs_gpu", False))
        compiled = getattr(launch, "source", None)            # sweeper.cuda's file
        attrs["cuda_source"] = compiled if attrs["needs_gpu"] and \
            isinstance(compiled, Path) else None
        attrs["declared_model"] = self.declared_model(name, attrs["meta_params"],
                                                      attrs["dims"])
        attrs["__module__"] = getattr(launch, "__module__", __name__)
        # the launch's own docstring: not its type's (a sweeper.cuda launch's class, a
        # functools.partial's), which says nothing of this kernel
        own = inspect.getdoc(launch) if launch.__doc__ is not type(launch).__doc__ else None
        source = attrs["cuda_source"]
        attrs["__doc__"] = own or (
            f"The CUDA C kernel {name!r} of {source.name} (sweeper.cuda)." if source else
            f"The short kernel {name!r} (sweeper.kernel).")
        return attrs

    def checked_build(self, launch: Callable[..., Any]) -> type[ShortKernel]:
        """:meth:`build`, and the names ``grid=`` and the launch read checked against what
        the kernel declares (:meth:`check_names`: a misspelt meta-parameter,
        ``cdiv(n, BLOK)``), where the mistake is, rather than by a space at its own
        ``kernel:`` line: a declaration written by hand names its meta-parameters, where a
        space's ``cuda`` kernel takes them from the space's axes after it is built."""
        built = self.build(launch)
        check_extents(built.name, built.launch_shape, built.meta_params)
        self.check_names(built.name, launch, built.dims, built.meta_params)
        return built

    def checked(self, launch: Callable[..., Any]) -> dict[str, Any]:
        """Every check :meth:`checked_build` makes, in its order, nothing built: the
        attributes it would give (its source unread).  ``sweeper plan`` checks a
        declaration read from its module's source with it (:mod:`._unimported`), the
        launch and the functions it is given stood in for by their signatures, so that a
        mistake is refused by the same check, in the same words, as importing it would."""
        attrs = self.attributes(launch, sourced=False)
        check_extents(attrs["name"], attrs["launch_shape"], attrs["meta_params"])
        self.check_names(attrs["name"], launch, attrs["dims"], attrs["meta_params"])
        return attrs

    def check_names(self, name: str, launch: Callable[..., Any], dims: Mapping[str, Dim],
                    meta: Mapping[str, MetaParam]) -> None:
        """Refuse a ``grid=`` (``grid_y=``, ``grid_z=``) expression that reads a name
        kernel ``name`` does not declare (``dims``, ``meta``, the launch and fact
        names: a ``sweeper.cuda`` launch's ``block_size_y`` and ``block_size_z`` too, 1
        where not swept), then a ``launch`` whose own expression does
        (:func:`check_launch_names`)."""
        extents = getattr(launch, "launch_shape", WARP_BLOCKS).extent_names
        for key, grid in (("grid", self.grid), ("grid_y", self.grid_y),
                          ("grid_z", self.grid_z)):
            if not isinstance(grid, str):
                continue
            expr = parsed(name, f"{key}={grid!r}", grid)
            known = sorted({"block", "footprint", *FACT_NAMES, *dims, *meta, *extents})
            unknown = sorted(expr.names - set(known))
            defined = defined_as(expr, unknown[0], known, extents) \
                if unknown and extents else None
            if defined is not None:
                raise SweeperError(f"kernel {name}: {key}={defined}")
            if unknown:
                raise SweeperError(f"kernel {name}: {key}={grid!r} reads "
                                   f"{unknown[0]!r}, which the kernel does not declare; "
                                   f"known: {', '.join(known)}{did_you_mean(unknown[0], known)}")
        check_launch_names(name, launch, dims, meta)

    def refuse_triton_launch(self, launch: Callable[..., Any]) -> None:
        """Refuse a ``@triton.jit`` function given as the launch (``@sweeper.kernel``
        stacked on ``@triton.jit``): sweeper calls the launch with the tensors and
        ``config``, which a Triton kernel cannot take (it is launched by
        ``kernel[grid](...)``), so every config would crash alike."""
        if not type(launch).__module__.startswith("triton."):
            return
        jitted = getattr(launch, "__name__", type(launch).__name__)
        name = self.name or jitted
        tensors = ", ".join(self.inputs) if isinstance(self.inputs, Mapping) else "..."
        raise SweeperError(
            f"kernel {name}: the launch is the Triton kernel {jitted} itself "
            f"({type(launch).__name__}); give a Python function of the tensors by name and "
            f"config that launches it: def {name}({tensors}, config): {jitted}"
            f"[(config.grid,)]({tensors}, ..., num_warps=config.num_warps, **config.meta)")

    def declares(self, name: str, *, meta: bool = True, dims: bool = True,
                 shape: LaunchShape = WARP_BLOCKS) -> dict[str, Any]:
        """What kernel ``name`` declares that a space is checked against, as the class
        attributes: its ``dims`` and ``meta_params`` (an autotuner's configs too), the
        ``defaults`` of the axes a space leaves out and its footprint, and the blocks its
        launch takes (``shape``: its launch's, a ``sweeper.cuda`` one's any count of
        threads); without ``meta`` (or ``dims``) the meta-parameters (the dimensions and
        footprint) left out, as :mod:`sweeper.kernels._unimported` leaves out what it
        could not read, and without ``meta`` the defaults too unless ``grid=`` is given:
        the default grid ``cdiv(n, BLOCK)`` reads a meta-parameter, and the rest reads
        none, so a study read back without its code (an ``autotuned=`` only importing
        the module resolves, whose configs the study kept) launches its kernel's grid."""
        sizes = _dims(name, self.dims)
        attrs: dict[str, Any] = {"dims": sizes, "meta_params": _meta(name, self.meta),
                                 "launch_shape": shape}
        if self.autotuned is not None:
            attrs.update(autotune_declaration(name, self.autotuned, sizes, attrs["meta_params"]))
        if meta:
            attrs["defaults"] = self.defaults(name, sizes, attrs["meta_params"], shape)
            first = attrs.get("autotune_params", {}).get("block")
            if first and self.block is None:      # the first config's warps, as its meta's
                attrs["defaults"]["block"] = first[0]
        else:
            del attrs["meta_params"]
            if self.grid is not None:
                attrs["defaults"] = self.defaults(name, sizes, {}, shape)
        if dims:
            attrs.update(self.shape(name, sizes))
        else:
            del attrs["dims"]
        return attrs

    def declared_model(self, name: str, meta: Mapping[str, MetaParam],
                       dims: Mapping[str, Dim]) -> DeclaredModel | None:
        """The built-in model ``model=`` names, its launch settings checked against the
        meta-parameters ``meta`` and a tiled or row-wise model's sizes against the
        dimensions ``dims``
        (one read already, a ``cuda`` kernel's, is kept)."""
        if self.model is None or isinstance(self.model, DeclaredModel):
            return self.model
        inputs = len(self.inputs) if isinstance(self.inputs, Mapping) else None
        try:
            return read_model(self.model, list(meta), inputs, list(dims))
        except OptionError as err:
            raise SweeperError(f"kernel {name}: {err.key}: {err}") from None

    def defaults(self, name: str, dims: Mapping[str, Dim], meta: Mapping[str, MetaParam],
                 shape: LaunchShape = WARP_BLOCKS) -> dict[str, Any]:
        """The values of the launch and problem axes a space leaves out: a footprint of
        64 MiB where ``dims`` is not declared, else the dimensions' defaults; ``block=``
        one the launch takes (``shape``)."""
        grid = self.grid
        if grid is None:
            if "n" not in dims or "BLOCK" not in meta:
                raise SweeperError(f"kernel {name}: give grid=, an expression such as "
                                   "\"cdiv(n, BLOCK_SIZE)\"; the default cdiv(n, BLOCK) needs "
                                   "a dimension n and a meta-parameter BLOCK")
            grid = "cdiv(n, BLOCK)"
        elif not isinstance(grid, str) and ((count := whole(grid)) is None or count < 1):
            raise SweeperError(f"kernel {name}: grid={grid!r}; give the programs launched: "
                               "an expression such as \"cdiv(n, BLOCK)\", or an integer >= 1")
        if self.block is not None and ((count := whole(self.block)) is None or
                                       not shape.allows(count)):
            raise SweeperError(f"kernel {name}: block={self.block!r} threads per program; "
                               f"allowed: {shape.text}")
        if self.dtype is not None and (type(self.dtype) is not str or
                                       self.dtype not in DTYPES):
            raise SweeperError(f"kernel {name}: dtype={self.dtype!r}; allowed: "
                               f"{', '.join(DTYPES)}")
        out = {"grid": grid if isinstance(grid, str) else whole(grid),
               "block": whole(self.block) or 128, "dtype": self.dtype or "float32"}
        for axis, given in (("grid_y", self.grid_y), ("grid_z", self.grid_z)):
            if given is None:
                continue
            if axis not in shape.grids:
                raise SweeperError(f"kernel {name}: {axis}={given!r}, but its launch takes "
                                   "a grid in x alone (config.grid); allowed: a launch whose "
                                   "grid has y and z, sweeper.cuda's")
            if not isinstance(given, str) and ((count := whole(given)) is None or count < 1):
                raise SweeperError(f"kernel {name}: {axis}={given!r}; give the blocks "
                                   "launched in y or z: an expression such as \"cdiv(M, "
                                   "block_size_y)\", or an integer >= 1")
            out[axis] = given if isinstance(given, str) else whole(given)
        # declared dimensions size a space that leaves them out; 64 MiB where none are
        # declared, or n is without a default
        if self.dims is None or (list(dims) == ["n"] and dims["n"].default is None):
            out["footprint"] = "64MiB"
        return out

    def shape(self, name: str, dims: Mapping[str, Dim]) -> dict[str, Any]:
        """The footprint of a problem (``footprint_bytes``) and, for a 1-D kernel whose
        footprint is ``n * itemsize``, its dimension from a footprint; other kernels'
        spaces give their dimensions."""
        if self.footprint_bytes is not None and type(self.footprint_bytes) is not str:
            raise SweeperError(f"kernel {name}: footprint_bytes={self.footprint_bytes!r}; "
                               f"give the bytes a problem is named by as an expression "
                               f"over {', '.join(dims)} and itemsize (a string, e.g. "
                               "\"M * K * itemsize\")")
        if list(dims) == ["n"] and _one_array(self.footprint_bytes):
            return {"footprint_bytes": self.footprint_bytes or "n * itemsize",
                    "dims_from_footprint": {"n": "footprint // itemsize"}}
        if self.footprint_bytes is None:
            raise SweeperError(f"kernel {name}: give footprint_bytes=, the bytes a problem "
                               f"is named by, as an expression over {', '.join(dims)} and "
                               "itemsize (the largest array's, e.g. \"M * K * itemsize\")")
        return {"footprint_bytes": self.footprint_bytes, "dims_from_footprint": {}}

    def plan(self, name: str, launch: Callable[..., Any], dims: tuple[str, ...], *,
             sourced: bool = True) -> Plan:
        """What the kernel does with its tensors, each checked (its source read where
        ``sourced``)."""
        if callable(self.inputs):
            inputs: Mapping[str, TensorSpec] | Factory = self.inputs
            input_names: tuple[str, ...] = ()
        elif isinstance(self.inputs, Mapping) and self.inputs:
            inputs = {_tensor_name(name, "inputs", n): tensor_spec(name, f"inputs[{n!r}]", s,
                                                                   dims)
                      for n, s in self.inputs.items()}
            input_names = tuple(inputs)
        else:
            raise SweeperError(f"kernel {name}: inputs= is a dict of name -> shape (\"n\", "
                               "\"M, K\") or a factory problem -> dict of tensors, got "
                               f"{self.inputs!r}"[:300])
        outputs = _outputs(name, self.outputs, input_names, dims, callable(self.inputs))
        if not callable(self.reference):
            raise SweeperError(f"kernel {name}: reference= must be a function of the inputs "
                               "returning the outputs")
        tolerances = {**TOLERANCES, **_tolerances(name, self.tolerance)}
        if self.verify is not None and self.tolerance is not None:
            raise SweeperError(f"kernel {name}: tolerance= {UNUSED_TOLERANCE}=")
        wrong = check_problem(self.check, tuple(outputs))
        if wrong is not None:
            raise SweeperError(f"kernel {name}: check{wrong[0]}: {wrong[1]}")
        source, own_files, module = _source(launch, self) if sourced else ("", (), None)
        return Plan(launch=launch, reference=self.reference, inputs=inputs, outputs=outputs,
                    tolerances=tolerances, bytes_moved=_counted(name, "bytes_moved",
                                                                self.bytes_moved, dims),
                    flops=_counted(name, "flops", self.flops, dims), baseline=self.baseline,
                    refuse=self.refuse, source=source, own_files=own_files, module=module,
                    reread=functools.partial(_source_now, launch, self) if sourced else None,
                    check=tuple(self.check or ()), verify=self.verify)


def check_problem(check: object, outputs: Sequence[str]) -> tuple[str, str] | None:
    """Where ``check`` (``check=``, a space's ``check:``) names no outputs to compare with
    the reference's, and why: ``("", why)`` for the list itself, ``("[i]", why)`` for its
    item ``i``; ``None`` where it is ``None`` (every output) or a list of distinct names of
    ``outputs``.  Kernel Tuner's ``answer`` with ``None`` where an argument is not
    checked is the list of those that are."""
    allowed = f"allowed: a list of the outputs compared with the reference's ({', '.join(outputs)})"
    if check is None:
        return None
    if isinstance(check, str) or not isinstance(check, Sequence) or not check:
        return "", f"{cut(repr(check), 60)} is no list of outputs; {allowed}"
    for i, name in enumerate(check):
        if name not in outputs or name in check[:i]:
            why = "is named twice" if name in check[:i] else "is no output"
            return f"[{i}]", (f"{cut(repr(name), 60)} {why}; {allowed}"
                              f"{did_you_mean(str(name), outputs) if name not in outputs else ''}")
    return None


def check_launch_names(kernel: str, launch: Callable[..., Any], dims: Mapping[str, Dim],
                       meta: Mapping[str, MetaParam]) -> None:
    """Refuse a launch whose own expression of the config reads a name kernel ``kernel``
    does not declare (``dims``, ``meta``): a ``sweeper.cuda`` launch's ``shared_memory``
    (:meth:`~sweeper.kernels._cuda_build.CudaLaunch.shared_memory_problem`), asked of
    the launch where it has one; a space's ``cuda`` kernel checks it against its axes."""
    check = getattr(launch, "shared_memory_problem", None)
    found = check(tuple(dims), tuple(meta)) if callable(check) else None
    if found is not None:
        raise SweeperError(f"kernel {kernel}: shared_memory: {found}")


def _check_calls(kernel: str, plan: Plan) -> None:
    """Refuse a launch, reference or baseline whose parameters cannot take the call it
    gets (``launch(**tensors, config=config)``, ``reference(**inputs)``,
    ``baseline(**tensors)``, every argument by name), as the kernel is declared: called
    so, it would fail every config alike.  With an inputs factory only the names known
    here are checked; a function whose signature Python cannot tell is not checked."""
    if isinstance(plan.inputs, Mapping):
        inputs, factory = list(plan.inputs), False
    else:               # a factory's names are known once it runs, but those written in place
        inputs, factory = [n for n, spec in plan.outputs.items() if spec is None], True
    tensors = [*inputs, *(n for n, spec in plan.outputs.items() if spec is not None)]
    calls = [("the launch function", plan.launch, tensors, True, "tensor"),
             ("reference=", plan.reference, inputs, False, "input")]
    if plan.baseline is not None:
        calls.append(("baseline=", plan.baseline, tensors, False, "tensor"))
    for what, fn, names, config, noun in calls:
        try:
            signature = inspect.signature(fn)
        except (TypeError, ValueError):
            continue
        given = {n: None for n in names} | ({"config": None} if config else {})
        try:
            (signature.bind_partial if factory else signature.bind)(**given)
        except TypeError as err:
            label = getattr(fn, "__name__", type(fn).__name__)
            at = defined_at(fn)
            call = ", ".join(f"{n}=..." for n in given)
            listed = f" ({', '.join(names)})" if names else ""
            raise SweeperError(
                f"kernel {kernel}: {what} {label}{signature}{f' at {at}' if at else ''} "
                f"cannot take the call it gets, {label}({call}): {err}; give it one "
                f"parameter per {noun}, by its name{listed}"
                f"{' and config' if config else ''}") from None


#: The functions a declaration gives that a kernel calls with arguments in order, by
#: keyword: the arguments (as a refusal shows the call), the parameters it must then
#: take, and what it is.  ``refuse(config)`` decides whether a config runs,
#: ``verify(outputs, expected)`` whether a trial's checked outputs agree with the
#: reference's (each a dict of output name -> tensor), in place of the tolerance check.
CALLED: dict[str, tuple[tuple[str, ...], str, str]] = {
    "refuse": (("config",), "one parameter, the config",
               "a function of the config returning None (run it) or a string saying why "
               "not"),
    "verify": (("outputs", "expected"), "two parameters, the outputs and the reference's",
               "a function of the outputs and the reference's (two dicts of output name -> "
               "tensor) returning None or True where they agree, else False or a string "
               "saying why not"),
}
#: The functions a ``cuda`` kernel's launch calls, as :data:`CALLED` describes those a
#: declaration's kernel calls: each of ``constant_memory``'s, with the config, for the data
#: of a ``__constant__`` symbol.
LAUNCH_CALLED: dict[str, tuple[tuple[str, ...], str, str]] = {
    "constant_memory": (("config",), "one parameter, the config",
                        "a function of the config returning a numpy array or torch tensor"),
}
#: Why a tolerance beside a ``verify`` is refused, after the tolerance's key and before
#: the verify's (``=`` in Python, ``:`` in a space).
UNUSED_TOLERANCE = ("would never be used: verify replaces the tolerance check (a verify "
                    "compares at tolerances of its own); allowed: one of tolerance and verify")


def _check_called(kernel: str, key: str, fn: Any) -> None:
    """Refuse a ``key=`` (:data:`CALLED`: ``refuse=``, ``verify=``) that is no function, or
    one that cannot take the arguments it is called with: called so, it would fail at
    every config alike."""
    if fn is None:
        return
    if not callable(fn):
        raise SweeperError(f"kernel {kernel}: {key}= must be {CALLED[key][2]}, got "
                           f"{fn!r}"[:300])
    label = getattr(fn, "__name__", type(fn).__name__)

    def named(signature: inspect.Signature) -> str:
        at = defined_at(fn)
        return f"kernel {kernel}: {key}= {label}{signature}{f' at {at}' if at else ''}"

    problem = cannot_take(key, fn, named, label)
    if problem is not None:
        raise SweeperError(problem)


def cannot_take(key: str, fn: Callable[..., Any], named: Callable[[inspect.Signature], str],
                label: str) -> str | None:
    """Why ``fn`` cannot be called as a kernel calls its ``key`` (:data:`CALLED`,
    :data:`LAUNCH_CALLED`), with its arguments in order (the call shown as
    ``label(config)``): what ``named`` calls it (given its signature) ``cannot take the
    call it gets``, what Python said, and what it must take; ``None`` where it can, or
    where Python cannot tell its signature (not checked).  The short form's ``refuse=``
    and ``verify=``, a space's ``refuse:`` and ``verify:`` and a ``cuda`` kernel's
    ``constant_memory`` functions are checked by it alike."""
    arguments, takes, _ = {**CALLED, **LAUNCH_CALLED}[key]
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    try:
        signature.bind(*(None for _ in arguments))
    except TypeError as err:
        return (f"{named(signature)} cannot take the call it gets, "
                f"{label}({', '.join(arguments)}): {err}; give it {takes}")
    return None


def _tensor_name(kernel: str, where: str, name: Any) -> str:
    if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name) or \
            name in RESERVED:
        raise SweeperError(f"kernel {kernel}: {where}: {name!r} is not a tensor name; a "
                           f"Python identifier other than {', '.join(RESERVED)}")
    return name


def _outputs(kernel: str, raw: Any, inputs: tuple[str, ...], dims: tuple[str, ...],
             factory: bool) -> dict[str, TensorSpec | None]:
    """Each output's spec; ``None`` for one written in place (named, not shaped)."""
    if isinstance(raw, str) or not isinstance(raw, (Mapping, Sequence)) or not raw:
        raise SweeperError(f"kernel {kernel}: outputs= names the inputs written in place "
                           "([\"x\"]) or maps new outputs to shapes ({\"y\": \"n\"}), got "
                           f"{raw!r}"[:300])
    return output_specs(
        raw, None if factory else inputs,
        lambda n, s: tensor_spec(kernel, f"outputs[{n!r}]", s, dims),
        named=lambda n: _tensor_name(kernel, "outputs", n),
        shaped_input=lambda n: SweeperError(
            f"kernel {kernel}: outputs[{n!r}] is an input too; an output written in place is "
            f"named, not shaped: outputs=[{n!r}]"),
        not_input=lambda n: SweeperError(
            f"kernel {kernel}: output {n!r} is no input (inputs: {', '.join(inputs)}); give "
            f"its shape: outputs={{{n!r}: \"n\"}}"))


def _dims(kernel: str, raw: Mapping[str, int | Dim] | None) -> dict[str, Dim]:
    if raw is None:
        return {"n": Dim("elements of each array", default=1 << 20)}
    out = {}
    for n, d in (raw.items() if isinstance(raw, Mapping) else [(raw, None)]):
        if not isinstance(n, str) or not n.isidentifier():
            raise SweeperError(f"kernel {kernel}: dims: {n!r} is not a dimension name")
        if isinstance(d, Dim):
            out[n] = d
        elif (size := whole(d)) is not None and size >= 1:
            out[n] = Dim(f"dimension {n}", default=size)
        else:
            raise SweeperError(f"kernel {kernel}: dims[{n!r}] = {d!r}; give its default "
                               "size (an integer >= 1) or a sweeper.kernels.Dim")
    return out


def _meta(kernel: str, raw: Mapping[str, int | MetaParam] | None) -> dict[str, MetaParam]:
    if raw is not None and not isinstance(raw, Mapping):
        raise SweeperError(f"kernel {kernel}: meta= is a dict of meta-parameter -> default "
                           f"({{\"BLOCK\": 1024}}), got {raw!r}"[:300])
    out = {}
    for n, m in (raw or {}).items():
        if not isinstance(n, str) or not n.isidentifier():
            raise SweeperError(f"kernel {kernel}: meta: {n!r} is not a meta-parameter name")
        if isinstance(m, MetaParam):
            out[n] = m
        elif (default := whole(m)) is not None:
            out[n] = MetaParam(default=default)
        else:
            raise SweeperError(f"kernel {kernel}: meta[{n!r}] = {m!r}; give its default (an "
                               "integer) or a sweeper.kernels.MetaParam")
    return out


def check_extents(kernel: str, shape: LaunchShape, meta: Mapping[str, MetaParam]) -> None:
    """Refuse a meta-parameter ``meta=`` declares as the block's y or z of a launch that
    takes ``shape`` (a ``sweeper.cuda`` one's ``block_size_y``, ``block_size_z``) whose
    default or one of whose choices no CUDA block takes: where the kernel is declared,
    naming it in the words a space's axis is refused in
    (:meth:`~sweeper.core.LaunchShape.extent_problem`), not first where a space leaves the
    axis out (whose hint, a switch's ``choices=(0, 1)``, no block's extent may take).  A
    space's own ``cuda`` kernel, whose axes give every value, is built without it."""
    for name, _ in shape.extents:
        declared = meta.get(name)
        for value in () if declared is None else (declared.default, *declared.choices):
            wrong = shape.extent_problem(name, value) if whole(value) is not None else None
            if wrong is not None:
                raise SweeperError(f"kernel {kernel}: meta: {wrong}")


def _headline(kernel: str, raw: Headline | str | None) -> Headline:
    """The rate reports lead with: a :class:`Headline` or its value as text (``"tflops"``);
    GB/s where none is given."""
    if raw is None:
        return Headline.GBPS
    try:
        return Headline(raw)
    except ValueError:
        raise SweeperError(f"kernel {kernel}: headline={raw!r}; allowed: "
                           f"{', '.join(repr(h.value) for h in Headline)} or a "
                           "sweeper.kernels.Headline") from None


def _tolerances(kernel: str, raw: Mapping[Any, Any] | None) -> dict[str, tuple[float, float]]:
    """``tolerance=`` by the dtype names a check looks them up by: a key may be any
    spelling of a dtype (``fp16``, ``torch.float16``); a tolerance under a key that is none
    would be ignored without a word, and one that is not a pair would fail every config's
    check, so both are refused here."""
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise SweeperError(f"kernel {kernel}: tolerance= is a dict of dtype -> (rtol, atol), "
                           f"got {raw!r}"[:300])
    out = {}
    for key, pair in raw.items():
        dtype = canonical_dtype(str(key))
        if dtype is None:
            raise SweeperError(f"kernel {kernel}: tolerance: {key!r} is not a dtype; allowed: "
                               f"{', '.join(DTYPES)}{did_you_mean(str(key), DTYPES)}")
        read = tolerance_pair(pair)
        if read is None:
            raise SweeperError(f"kernel {kernel}: tolerance[{key!r}] = {pair!r}; give "
                               "(rtol, atol), two numbers >= 0 (e.g. (1e-3, 1e-5))"[:300])
        out[dtype] = read
    return out


def tolerance_pair(pair: object) -> tuple[float, float] | None:
    """``pair`` as ``(rtol, atol)`` where it is two real numbers >= 0, else ``None``."""
    if not (isinstance(pair, (tuple, list)) and len(pair) == 2 and all(
            isinstance(t, numbers.Real) and not isinstance(t, bool) and float(t) >= 0
            for t in pair)):
        return None
    return float(pair[0]), float(pair[1])


def _counted(kernel: str, what: str, raw: Count | None, dims: tuple[str, ...]
             ) -> Expr | Callable[[Any], int] | None:
    if raw is None or callable(raw):
        return raw
    expr = parsed(kernel, what, raw) if isinstance(raw, str) else None
    if expr is None or expr.names - {*dims, "itemsize"}:
        raise SweeperError(f"kernel {kernel}: {what}= is an expression over "
                           f"{', '.join((*dims, 'itemsize'))} or a function of the problem, "
                           f"got {raw!r}")
    return expr


def _source(launch: Callable[..., Any], declared: Declaration
            ) -> tuple[str | Callable[[], str], tuple[Path, ...], str | None]:
    """What identifies the kernel's version in a study: the source of the module that
    declares it (the launch's, or where the launch is imported from another of the
    user's modules, the one that called :func:`kernel`, whose own imports then hold the
    launch's module; its Triton code too; as its import read it, where it was imported so:
    :func:`~sweeper.kernels._own_modules.loaded_text`) and of the user's own modules it imports
    (:func:`~sweeper.kernels._own_modules.own_source`); in ``__main__`` (a notebook, a
    script) or a module without a file, the code the declaration reaches
    (:func:`_unfiled`); and after it a compiled launch's own code (``sweeper.cuda``: its
    files), read as a study asks for it, so that the text hashed is the one compiled, an
    edit since the kernel was declared too.  And the files of those own modules, found
    in the same walk of the imports (:attr:`Plan.own_files`, which a sweep watches):
    none for ``__main__``, whose code no other process imports and no save of a file
    changes once it runs.  The code a kernel in ``__main__`` reaches is read as a study
    asks for it: a notebook cell run again redefines the ``@triton.jit`` function the
    launch calls by its name, which is then the code that runs."""
    from sweeper.kernels._own_modules import loaded_text, own_modules, source_of, theirs

    module = sys.modules.get(getattr(launch, "__module__", ""))
    declaring = sys.modules.get(declared.declared_in or "")
    moved = None
    if module is not None and declaring is not None and declaring is not module and \
            declaring.__name__ != "__main__" and getattr(declaring, "__file__", None) and \
            not theirs(module.__name__) and not theirs(declaring.__name__):
        module = declaring
        moved = declaring.__name__
    own = getattr(launch, "kernel_source", None)          # a compiled launch's own code
    imported: list[tuple[str, Path]] = []
    head: str | Callable[[], str] = ""
    if module is not None and module.__name__ == "__main__":
        head = functools.partial(_unfiled, launch, declared)
    elif module is not None:
        try:
            head = loaded_text(module) or inspect.getsource(module)
        except (OSError, TypeError):                      # a module without a file
            head = functools.partial(_unfiled, launch, declared, module.__name__)
        else:
            file = getattr(module, "__file__", None)
            if head and file:
                imported = own_modules(module.__name__, file)
                head += source_of(imported)
    files = tuple(path for _, path in imported)
    if callable(head) or callable(own):
        return functools.partial(_joined, head, own), files, moved
    return head, files, moved


def _source_now(launch: Callable[..., Any], declared: Declaration) -> str:
    """:func:`_source`'s text read again as the files hold it now, those of modules
    imported as read (:func:`~sweeper.kernels._own_modules.files_as_now`) too: the source
    a new process would hash, for telling whether this one's code was edited since."""
    from sweeper.kernels._own_modules import files_as_now

    with files_as_now():
        return _joined(_source(launch, declared)[0])


def _joined(*parts: str | Callable[[], str] | None) -> str:
    """The source of a kernel read as a study asks for it: each part's text, a function's
    as it gives it now."""
    return "".join(p() if callable(p) else p or "" for p in parts)


def _unfiled(launch: Callable[..., Any], declared: Declaration, main: str = "__main__"
             ) -> str:
    """The version of a kernel declared in ``__main__`` (a notebook, a REPL, a script) or
    another module no file holds: the declaration as it reads, without the addresses its
    functions' reprs carry, and the code its launch and every function it names reach
    (:func:`~sweeper.kernels._reached.reached_source`: the ``@triton.jit`` function the
    launch calls, its helpers, the constants they read), so that the same cells give the
    same hash in a new process, an edit of any of that code another, and an edit of
    the rest of the notebook or script (the sweep's own call, the analysis) none."""
    from sweeper.kernels._reached import ADDRESS, reached_source

    roots = [launch, *(getattr(declared, f.name) for f in fields(declared)
                       if f.name != "declared_in")]
    text = ADDRESS.sub("", repr(declared)) + "\0" + reached_source(roots, main)
    return hashlib.sha256(text.encode()).hexdigest()


@cut_at_call
@entry(spelled=False, needs={
    "inputs": "the tensors by name and shape, such as {'x': 'n'}, or a factory "
              "problem -> dict of tensors",
    "outputs": "the outputs: inputs written in place by name, such as ['x'], or new ones "
               "by shape, such as {'y': 'n'}",
    "reference": "torch code on copies of the inputs that returns the outputs, such as "
                 "lambda x: x * 2"})
def kernel(launch: Callable[..., Any] | None = None, /, *,
           inputs: Mapping[str, Any] | Factory, outputs: Sequence[str] | Mapping[str, Any],
           reference: Callable[..., Any], name: str | None = None,
           meta: Mapping[str, int | MetaParam] | None = None,
           dims: Mapping[str, int | Dim] | None = None, grid: str | int | None = None,
           grid_y: str | int | None = None, grid_z: str | int | None = None,
           block: int | None = None, dtype: str | None = None,
           footprint_bytes: str | None = None, bytes_moved: Count | None = None,
           flops: Count | None = None, baseline: Callable[..., Any] | None = None,
           baseline_name: str | None = None,
           tolerance: Mapping[str, tuple[float, float]] | None = None,
           headline: Headline | str | None = None, autotuned: Any = None,
           model: Mapping[str, Any] | None = None,
           refuse: Callable[[Config], str | None] | None = None,
           check: Sequence[str] | None = None,
           verify: Callable[[dict[str, Any], dict[str, Any]], object] | None = None,
           ) -> Any:
    """Declare a kernel from ``launch(**tensors, config)``; without ``launch``, a
    decorator that takes it.  Returns a :class:`~sweeper.kernels.Kernel` subclass.

    - ``inputs``: ``{"x": "n", "a": "rows, cols", "idx": ("n", "int32")}``, shapes as
      expressions over the dimensions, one per axis (``"rows, cols"``: a 2-D tensor), in
      the problem's dtype unless given, or a factory ``problem -> dict`` of
      tensors (run with the target device as torch's default device);
    - ``outputs``: inputs written in place by name (``["x"]``), or new outputs by shape
      (``{"y": "n"}``);
    - ``reference(**inputs)``: torch code on copies of the inputs, returning the outputs
      (a tensor, a tuple in ``outputs``' order, a dict), or ``None`` after changing its
      arguments in place;
    - ``meta``: meta-parameters and their defaults (``{"BLOCK": 1024}`` or ``MetaParam``);
      ``dims``: the problem's dimensions and default sizes, which a space giving no size
      measures (without ``dims``: ``n``, and a 64 MiB footprint by default);
      ``grid``, ``block``, ``dtype``: defaults for the axes a space leaves out (``grid_y``
      and ``grid_z`` too, for a ``sweeper.cuda`` launch, whose grid has y and z: 1
      where neither gives them; ``block`` any count of threads up to 1024 there, not
      warps);
    - ``bytes_moved``, ``flops``: an expression over the dimensions and ``itemsize`` or a
      function of the problem returning a number >= 0 (an int or a finite float; anything
      else fails that problem's configs, at the function's line); bytes default to
      inputs read plus outputs written;
      ``footprint_bytes``: required when the dimensions are not just ``n``; where it is
      other than ``n * itemsize``, a space sizes the kernel by ``n``, not a footprint;
    - ``baseline(**tensors)``: the same work in torch, timed for the "% of torch" column
      (``baseline_name`` names it); ``tolerance``: ``{dtype: (rtol, atol)}`` over
      ``torch.testing.assert_close``'s defaults (a dtype by any spelling: ``"fp16"``,
      ``torch.float16``); ``headline``: ``"gbps"`` (default) or ``"tflops"``, the rate
      reports lead with;
    - ``check``: the outputs compared with the reference's (default: every one), which the
      reference then returns alone (one tensor, a tuple in ``check``'s order, a dict) or
      among every output (in ``outputs``' order); the others are poisoned before each
      check and never compared (Kernel Tuner's ``answer`` with ``None`` where not checked);
    - ``verify(outputs, expected)``: a comparison of one's own in place of the tolerance
      check (Kernel Tuner's ``verify``), given the checked outputs, the kernel's and the
      reference's, each a dict of output name -> tensor: ``None`` or ``True`` where they
      agree, else ``False`` or a string saying why not, the trial's wrong-answer reason.
      One that raises or returns anything else fails the trial as crashed, its reason
      saying what it did and where; ``tolerance`` beside it is refused (it would go
      unused);
    - ``autotuned``: the ``@triton.autotune`` function this launch calls (through its
      ``.fn``): its configs become the meta-parameters and the space that
      ``from_autotune`` builds (see :mod:`sweeper.kernels._autotune`);
    - ``model``: the built-in model that describes the kernel, for ``auto``'s search
      (``{"streaming": {"tile": "BLOCK", "inputs": 1}}``: an elementwise kernel moving
      ``BLOCK`` elements of each array per program step; ``{"tiled": {"m": "M", ...}}``
      for a matmul, ``{"rowwise": {"rows": "rows", "cols": "cols", "tile": "BLOCK"}}``
      for a row-wise kernel; see :mod:`sweeper.kernels._model_form`); without one
      ``auto`` searches without a model;
    - ``refuse(config)``: ``None`` to run the config, else a string saying why the kernel
      cannot (``config.meta``, ``config.block``, ``config.problem``'s dimensions and
      dtype): such a config is skipped with that reason, counted as skipped by the
      kernel, after the space's constraints and before anything is allocated.  One that
      raises or returns anything else fails the config's trial, its reason saying what it
      did and where.
    """
    declared = Declaration(
        inputs=inputs, outputs=outputs, reference=reference, name=name, meta=meta, dims=dims,
        grid=grid, grid_y=grid_y, grid_z=grid_z, block=block, dtype=dtype,
        footprint_bytes=footprint_bytes,
        bytes_moved=bytes_moved, flops=flops, baseline=baseline, baseline_name=baseline_name,
        tolerance=tolerance, headline=headline, autotuned=autotuned, model=model,
        refuse=refuse, check=check, verify=verify,
        declared_in=callers_frame(sys._getframe(1)).f_globals.get("__name__"))
    # the decorator a user applies is a call of the API too: its errors cut at it
    return cut_at_call(declared.checked_build) if launch is None else \
        declared.checked_build(launch)


def _one_array(footprint_bytes: str | None) -> bool:
    """Whether ``footprint_bytes`` (default ``n * itemsize``) is ``n * itemsize``, however
    written, so ``n = footprint // itemsize`` gives back the footprint; an expression that
    does not parse is refused where the footprint is read."""
    if footprint_bytes is None:
        return True
    try:
        expr = parse(footprint_bytes)
        return all(evaluate(expr, {"n": n, "itemsize": size}) == n * size
                   for n in (1, 3, 1000) for size in (1, 2, 8))
    except ExpressionError:
        return True
