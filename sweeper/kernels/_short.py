"""A kernel in a few lines: :func:`kernel` turns a launch function, the tensors and a
torch reference into a :class:`~sweeper.kernels.Kernel` subclass.

What a subclass writes by hand follows from the declaration: allocation from the tensor
shapes (or an inputs factory), random inputs from the seeded generator, poisoned outputs
(NaN, or the most negative integer), the check against the reference at
``torch.testing.assert_close``'s tolerances per dtype, and bytes moved as the inputs'
bytes read plus the outputs' bytes written.  The verification is the built-ins': the
first launch on fresh inputs and poisoned outputs, and the outputs again after the timed
launches.

An output that is also an input is written in place (``x *= a``).  Each timed launch then
works on the previous one's result, so the check after them cannot compare with one
application of the reference; instead the check restores the inputs from the copy taken
when they were randomized, poisons the other outputs, launches once more with the same
config and compares that launch with the reference on the restored inputs.  That proves a
launch made after the timed ones, with whatever state the kernel kept, still does the
work; a kernel that skips inputs it has seen by their version counter is not caught so,
since the restore writes them.  (Applying the reference as many times as the kernel ran
would need the count of launches, which a CUDA graph's replays hide, and would drift or
overflow for most operations.)
"""

from __future__ import annotations

import reprlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from sweeper.core import Config, Expr, Problem, evaluate
from sweeper.errors import (
    ReferenceFailed,
    RefusalFailed,
    SweeperError,
    VerifyFailed,
    defined_at,
    raised,
    user_line,
)
from sweeper.kernels._autotune import Hooks, row_of
from sweeper.kernels._base import (
    PRUNED,
    Buffers,
    CountError,
    Kernel,
    checked_count,
    fill_poison,
    fill_random,
)
from sweeper.kernels._jit import compiling
from sweeper.kernels._launched import mismatch, recording
from sweeper.kernels._tensors import Factory, TensorSpec, difference, made_by

if TYPE_CHECKING:
    from pathlib import Path

    import torch

    from sweeper.core import DeviceFacts
    from sweeper.kernels._model_form import DeclaredModel

#: How a problem's bytes or FLOPs are given: an expression over the dimensions and
#: ``itemsize``, or a function of the problem.
Count = str | Callable[[Problem], int]


@dataclass
class ShortBuffers(Buffers):
    """A short kernel's buffers, with the copies of its in-place inputs taken when they
    were randomized and the launches made since the outputs were last poisoned."""

    pristine: dict[str, torch.Tensor] = field(default_factory=dict)
    launches: int = 0
    #: ``restore_value``'s tensors of an autotuned kernel as its first launch on these
    #: inputs found them, by argument name (:class:`~sweeper.kernels._autotune.Hooks`)
    restored: dict[str, torch.Tensor] = field(default_factory=dict)


@dataclass(frozen=True)
class Plan:
    """What a short kernel does with its tensors: ``inputs`` (specs, or a factory) are
    randomized and passed to the reference; ``outputs`` are poisoned and checked, each
    made from its spec or, when ``None``, an input written in place."""

    launch: Callable[..., Any]
    reference: Callable[..., Any]
    inputs: Mapping[str, TensorSpec] | Factory
    outputs: Mapping[str, TensorSpec | None]
    tolerances: Mapping[str, tuple[float, float]]
    bytes_moved: Expr | Callable[[Problem], int] | None = None
    flops: Expr | Callable[[Problem], int] | None = None
    baseline: Callable[..., Any] | None = None
    #: ``refuse=``: why the kernel cannot run a config, or ``None``
    refuse: Callable[[Config], str | None] | None = None
    #: what identifies the kernel's version (:meth:`ShortKernel.source`); a function
    #: where it is read as asked (a compiled launch's files, which may be edited)
    source: str | Callable[[], str] = ""
    #: the files of the user's own modules the launch's module imports, those whose text
    #: :attr:`source` holds (found once, as it was read)
    own_files: tuple[Path, ...] = ()
    #: the module whose text heads :attr:`source`: the one that declares the kernel, where
    #: it imports the launch from another of the user's modules (``None``: the launch's)
    module: str | None = None
    #: :attr:`source` read again as the files hold it now (``None``: read once only)
    reread: Callable[[], str] | None = None
    #: ``check=``: the outputs compared with the reference's (none given: every one)
    check: tuple[str, ...] = ()
    #: ``verify=``: the user's own comparison of the checked outputs with the
    #: reference's, in place of the tolerance check (:func:`verified`); ``None``: none
    verify: Callable[[dict[str, Any], dict[str, Any]], object] | None = None

    @property
    def inplace(self) -> tuple[str, ...]:
        """The outputs written in place: inputs too."""
        return tuple(name for name, spec in self.outputs.items() if spec is None)

    @property
    def checked(self) -> tuple[str, ...]:
        """The outputs a trial compares with the reference's, in the order the reference
        may return them: ``check``, else every output.  Those left out are written by the
        kernel and poisoned before it runs, never compared (Kernel Tuner's ``None`` in
        ``answer``): a scratch buffer, or an output the reference does not compute."""
        return self.check or tuple(self.outputs)


class ShortKernel(Kernel):
    """The implementation behind every :func:`kernel`: the class attribute ``plan`` says
    what to launch, with which tensors, against which reference."""

    plan: ClassVar[Plan]
    #: The ``@triton.autotune`` configs as zipped axes (``sweeper.space``'s
    #: ``from_autotune``), and the autotuner's ``key``; ``None`` without one.
    autotune_params: ClassVar[Mapping[str, list[int]] | None] = None
    autotune_key: ClassVar[tuple[str, ...]] = ()
    #: What the autotuner runs around each launch and how it prunes its configs;
    #: ``None`` where it declares neither.
    autotune_hooks: ClassVar[Hooks | None] = None
    #: The built-in model its declaration names (``model=``, or a ``cuda`` kernel's
    #: ``model:`` option): what :meth:`model` answers; ``None``: no guess.
    declared_model: ClassVar[DeclaredModel | None] = None

    def __init__(self, *decorated: object) -> None:
        if decorated:       # @sweeper.kernel(launch, ...) over a def: the kernel is built
            raise SweeperError(
                f"kernel {self.name}: sweeper.kernel(launch, ...) is the kernel itself, "
                f"not a decorator, so it takes no function {_named(decorated[0])} under it; "
                f"allowed: {self.name} = sweeper.kernel(launch, ...), or @sweeper.kernel(...) "
                "without the launch over the launch function")
        self.config: Config | None = None          # the last launch's: the re-launch's
        #: the configs whose first launch was checked to run their grid and block (the
        #: finals launch their entrants in turn: each is checked once, not at every turn),
        #: and the last of them launched: a trial's samples launch it again and again,
        #: known without building its key
        self._launch_checked: set[tuple[Any, ...]] = set()
        self._checked_last: Config | None = None
        #: each problem's autotune rows ``prune_configs_by`` keeps, and a note on them; or
        #: how it failed (it, or the launch asked for its arguments)
        self._kept: dict[Problem, tuple[set[tuple[int, ...]], str] | RefusalFailed] = {}

    def allocate(self, problem: Problem, device: str) -> Buffers:
        plan = self.plan
        tensors = made_by(plan.inputs, problem, device) if callable(plan.inputs) else \
            {n: spec.make(problem, device) for n, spec in plan.inputs.items()}
        missing = [n for n in plan.inplace if n not in tensors]
        if missing:
            raise SweeperError(f"kernel {self.name}: output {missing[0]!r} is no input "
                               f"(inputs: {', '.join(tensors)}); give its shape: "
                               f"outputs={{{missing[0]!r}: 'n'}}")
        tensors.update({n: spec.make(problem, device) for n, spec in plan.outputs.items()
                        if spec is not None})
        if callable(plan.inputs):       # the factory's tensors are known only now
            refuse_launch_args(self.name, plan, tuple(tensors), tuple(self.dims),
                               tuple(self.meta_params))
        return ShortBuffers(problem, tensors)

    def inputs(self, buffers: Buffers) -> list[str]:
        """The names of the tensors the reference reads."""
        return [n for n in buffers.tensors
                if n not in self.plan.outputs or self.plan.outputs[n] is None]

    def randomize(self, buffers: Buffers, generator: torch.Generator) -> None:
        for name in self.inputs(buffers):
            fill_random(buffers[name], generator)
        if isinstance(buffers, ShortBuffers):
            buffers.pristine = {n: buffers[n].clone() for n in self.plan.inplace}
            buffers.restored = {}

    def poison(self, buffers: Buffers) -> None:
        for name, spec in self.plan.outputs.items():
            if spec is None and isinstance(buffers, ShortBuffers):
                buffers[name].copy_(buffers.pristine[name])     # as randomized: not done
            elif spec is not None:
                fill_poison(buffers[name])
        if isinstance(buffers, ShortBuffers):
            buffers.launches = 0

    def launch(self, buffers: Buffers, config: Config) -> None:
        self.config = config
        if isinstance(buffers, ShortBuffers):
            buffers.launches += 1
        if config is self._checked_last:
            self._launch(buffers, config)
            return
        key = (config.problem, config.grid, config.block, tuple(sorted(config.meta.items())))
        if key in self._launch_checked or compiling():
            self._launch(buffers, config)
            if key in self._launch_checked:
                self._checked_last = config
            return
        with recording() as launched:      # a config's first launch: did it run the config?
            self._launch(buffers, config)
        self._launch_checked.add(key)
        self._checked_last = config
        wrong = mismatch(launched, config.grid, config.num_warps)
        if wrong is not None:
            raise SweeperError(f"the launch of kernel {self.name} {wrong}")

    def _launch(self, buffers: Buffers, config: Config) -> None:
        hooks = self.autotune_hooks
        if hooks is None:
            self.plan.launch(**buffers.tensors, config=config)
            return
        saved = buffers.restored if isinstance(buffers, ShortBuffers) else {}
        hooks.launch(lambda: self.plan.launch(**buffers.tensors, config=config),
                     row_of(config, hooks.columns), saved, compiling=compiling())

    def refusal(self, config: Config, device: str) -> str | None:
        """Why the declaration's ``refuse=`` turns ``config`` down (:func:`refused`),
        else whether the autotuner's ``prune_configs_by`` drops it (:meth:`pruned`);
        :class:`~sweeper.errors.RefusalFailed` where either of them failed."""
        if self.plan.refuse is not None:
            reason = refused(self.plan.refuse, config)
            if reason is not None:
                return reason
        return self.pruned(config, device)

    def refusal_ahead(self, config: Config, device: str) -> str | None:
        """The declaration's ``refuse=`` alone: ``prune_configs_by`` is asked on buffers
        allocated for the problem, which the worker holds."""
        return None if self.plan.refuse is None else refused(self.plan.refuse, config)

    def pruned(self, config: Config, device: str) -> str | None:
        """A config the autotuner's ``prune_configs_by`` drops for this problem, as
        Triton would at the problem's first launch (the kept rows found once a problem,
        from the arguments a launch on buffers allocated for it passes);
        :class:`~sweeper.errors.RefusalFailed` for each listed config of a problem where
        it raised, or where the launch asked for its arguments failed before it reached
        the autotuned function (the reason says which), raised from what the user's code
        raised, so that ``--debug`` shows each config's trial that error."""
        hooks = self.autotune_hooks
        if hooks is None or hooks.autotuner is None:
            return None
        row = row_of(config, hooks.columns)
        if row not in hooks.rows:
            return None                     # a config the autotuner does not list
        if config.problem not in self._kept:
            buffers = self.allocate(config.problem, device)
            try:
                self._kept[config.problem] = hooks.pruned(
                    lambda: self.plan.launch(**buffers.tensors, config=config))
            except RefusalFailed as err:    # the user's launch or prune: it says which
                self._kept[config.problem] = err
        found = self._kept[config.problem]
        if isinstance(found, RefusalFailed):      # each config's own, from the user's error
            raise RefusalFailed(str(found)) from found.__cause__
        kept, note = found
        if row in kept:
            return None
        return (f"{PRUNED}{hooks.name}'s @triton.autotune: it "
                f"keeps {len(kept & set(hooks.rows))} of the {len(hooks.rows)} listed "
                f"configs for this problem, as Triton would at its first launch{note}")

    def check(self, buffers: Buffers) -> str | None:
        if isinstance(buffers, ShortBuffers) and buffers.launches > 1 and self.plan.inplace \
                and self.config is not None:
            self.poison(buffers)                       # restores the in-place inputs
            self.launch(buffers, self.config)
        expected = self.expected(buffers)
        if isinstance(expected, str):
            return expected
        if self.plan.verify is not None:
            return verified(self.plan.verify, {n: buffers[n] for n in self.plan.checked},
                            expected)
        for name in self.plan.checked:
            wrong = difference(name, buffers[name], expected[name], self.plan.tolerances)
            if wrong is not None:
                return wrong
        return None

    def expected(self, buffers: Buffers) -> dict[str, Any] | str:
        """The reference's checked outputs by name (:attr:`Plan.checked`), computed on
        copies of the inputs as they were randomized; a string saying what the reference
        returned when it is none of a tensor (the one output checked), a tuple (in
        ``check``'s order, or every output's in theirs), a dict or ``None`` (in place)."""
        pristine = buffers.pristine if isinstance(buffers, ShortBuffers) else {}
        args = {n: pristine.get(n, buffers[n]).clone() for n in self.inputs(buffers)}
        try:
            result = self.plan.reference(**args)
        except Exception as err:
            raise ReferenceFailed(raised("the reference", err)) from err
        names, every = list(self.plan.checked), list(self.plan.outputs)
        if result is None:
            missing = [n for n in names if n not in args]
            if missing:
                return (f"the reference returned None, so its outputs are its arguments "
                        f"changed in place, but output {missing[0]!r} is not an argument")
            return {n: args[n] for n in names}
        if isinstance(result, Mapping):
            missing = [n for n in names if n not in result]
            return {n: result[n] for n in names} if not missing else \
                f"the reference's dict lacks output {missing[0]!r}"
        results = list(result) if isinstance(result, (tuple, list)) else [result]
        if len(results) == len(names):
            return dict(zip(names, results, strict=True))
        if len(results) == len(every):              # every output's, in their order
            return {n: r for n, r in zip(every, results, strict=True) if n in names}
        of = "" if names == every else f" checked of {len(every)} ({', '.join(every)})"
        return (f"the reference returned {len(results)} value(s) for {len(names)} "
                f"output(s) ({', '.join(names)}){of}")

    def bytes_moved(self, problem: Problem) -> int:
        if self.plan.bytes_moved is not None:
            return _count("bytes_moved", self.plan.bytes_moved, problem)
        buffers = self.allocate(problem, "meta")
        return sum(buffers[n].numel() * buffers[n].element_size()
                   for n in (*self.inputs(buffers), *self.plan.outputs))

    def flops(self, problem: Problem) -> int:
        return 0 if self.plan.flops is None else _count("flops", self.plan.flops, problem)

    def model(self, config: Config, facts: DeviceFacts) -> float | None:
        """The declared model's guess (:mod:`sweeper.kernels._model_form`), or ``None``
        where the declaration names none."""
        return None if self.declared_model is None else self.declared_model(config, facts)

    @classmethod
    def values_problem(cls, values: Mapping[str, Sequence[int | str]]) -> tuple[str, str] | None:
        """Where a setting of the declared model is below its least at some combination of
        the space's values it reads: its key (``model.streaming.tile``) and why; else what
        the launch says of them, where it can (a ``sweeper.cuda`` launch: an integer
        argument its type cannot hold, at ``args``)."""
        model = None if cls.declared_model is None else \
            cls.declared_model.values_problem(values)
        launch = getattr(cls.plan.launch, "values_problem", None)
        return model or (launch(values) if callable(launch) else None)

    def baseline(self, buffers: Buffers) -> None:
        if self.plan.baseline is None:
            raise NotImplementedError(f"kernel {self.name} declares no baseline")
        self.plan.baseline(**buffers.tensors)

    @classmethod
    def declared_source(cls) -> str | None:
        """The plan's source, as it reads now (a launch's files edited since the kernel
        was declared: the edited text, the one compiled)."""
        source = cls.plan.source
        return source() if callable(source) else source

    def source(self) -> str:
        return self.declared_source() or ""

    def source_reread(self) -> str:
        """The plan's source as the files hold it now: the launch's module and the user's
        own modules it imports read anew, as a new process would import them.  A source
        read as asked (a compiled launch's, which its declaration may give a plan of its
        own) is read anew by :meth:`source` itself."""
        reread, source = self.plan.reread, self.plan.source
        return self.source() if reread is None or callable(source) else reread()

    def code_modules(self) -> tuple[str, ...]:
        """The module that declares the kernel and the launch's (one module but where the
        launch is imported from another), the user's own modules it imports (those whose
        text the source holds) and the modules of the functions the launch reaches from
        there (a ``@triton.jit`` function given it from another module, through a closure
        too)."""
        from sweeper.kernels._own_modules import modules_at, theirs
        from sweeper.kernels._reached import reached_modules

        launch = self.plan.launch
        main = self.plan.module or getattr(launch, "__module__", None) or \
            type(self).__module__
        if theirs(main) or main == "__main__":    # sweeper.cuda's launch; a notebook's
            return (main,)
        mine = getattr(launch, "__module__", None) or main
        return tuple(dict.fromkeys([main, mine, *modules_at(self.plan.own_files),
                                    *(m for m, _ in reached_modules([launch], mine))]))

    def source_files(self) -> tuple[Path, ...]:
        """The file of the module that declares the launch, those of the user's own
        modules it imports, and a compiled launch's own files (``sweeper.cuda``: the
        source and what it includes, as last read, and where it includes a file that is
        not there, which is included once written).  Not a script's own file: a kernel
        in ``__main__`` runs the code its process compiled, whatever the file says
        since, and no other process imports it (its source is what it reaches:
        :func:`~sweeper.kernels._reached.reached_source`)."""
        import sys

        from sweeper.kernels._watch import files_of

        launch = self.plan.launch
        own = getattr(launch, "files", None)
        name = self.plan.module or getattr(launch, "__module__", None) or ""
        module = () if name == "__main__" else files_of(sys.modules.get(name))
        imported = self.plan.own_files if module else ()
        absent = getattr(launch, "absent", None)
        try:
            compiled = tuple(p for p in own() if p not in module) if callable(own) else ()
            compiled += absent() if callable(absent) else ()
        except OSError:                 # gone since it was read: its source names it
            compiled = ()
        return module + imported + compiled


def _named(thing: object) -> str:
    """``'vadd'`` for a function, else what the thing is."""
    name = getattr(thing, "__name__", None)
    return repr(name) if isinstance(name, str) else type(thing).__name__


def refuse_launch_args(kernel: str, plan: Plan, tensors: Sequence[str], dims: Sequence[str],
                       meta: Sequence[str]) -> None:
    """Refuse a launch of ``kernel`` that lists its arguments (``sweeper.cuda``: its
    ``args_problem``) where they do not fit these tensors, dimensions and meta-parameters
    (a launch that lists none passes): asked as the kernel is declared, or for tensors
    from a factory as the factory first makes them, so a mistake never waits for a
    compile and a launch."""
    check = getattr(plan.launch, "args_problem", None)
    problem = check(tensors, dims, meta) if callable(check) else None
    if problem is not None:
        raise SweeperError(f"kernel {kernel}: args: {problem}")


def refused(refuse: Callable[[Config], object], config: Config) -> str | None:
    """What ``refuse(config)`` says: ``None`` to run ``config``, else why not.  Where it
    raises, or returns anything but ``None`` or a string that says something, the rule
    itself is broken: :class:`~sweeper.errors.RefusalFailed`, saying what it raised and
    at which line of the user's, or what it returned and where the function is, so the
    config's trial fails (it never runs on a rule that failed, nor is it refused)."""
    what = "the kernel's refuse="
    said = _asked(what, refuse, RefusalFailed, config)
    return None if said is None else _reason(said, lambda: RefusalFailed(_returned(
        refuse, what, said, "None to run the config or a string saying why not")))


#: The reason a trial whose ``verify=`` returned ``False`` is recorded with.
VERIFY_FALSE = "verify returned False"


def verified(verify: Callable[[dict[str, Any], dict[str, Any]], object],
             outputs: dict[str, Any], expected: dict[str, Any]) -> str | None:
    """What ``verify(outputs, expected)`` says of the kernel's checked outputs against the
    reference's (each a dict of output name -> tensor): ``None`` where they agree (it
    returned ``None`` or ``True``), else why not (the string it returned, or
    :data:`VERIFY_FALSE`), a wrong answer.  Where it raises, or returns anything else,
    the comparison itself is broken: :class:`~sweeper.errors.VerifyFailed`, naming the
    function, what it raised (at which line of the user's) or returned (and where the
    function is), so the trial fails as crashed, not as a wrong answer it never found."""
    label = getattr(verify, "__name__", type(verify).__name__)
    what = f"the kernel's verify= {label}"
    said = _asked(what, verify, VerifyFailed, outputs, expected)
    if said is None or said is True:
        return None
    return VERIFY_FALSE if said is False else _reason(said, lambda: VerifyFailed(_returned(
        verify, what, said, "None or True where the outputs agree, else False or a string "
        "saying why not")))


def _asked(what: str, fn: Callable[..., object], failed: type[Exception],
           *args: object) -> object:
    """What the user's ``fn`` (``what``, as a reason names it) returns, called with
    ``args``; ``failed`` where it raised, saying what at the line of the user's that
    raised, else (none of the user's) where ``fn`` is defined, raised from the user's
    error so that ``--debug`` shows it.  A ``failed`` it raised itself (one that wraps
    another: a space's ``refuse:``) passes as it is."""
    try:
        return fn(*args)
    except failed:
        raise
    except Exception as err:          # the user's code failed: its trial says so
        raise failed(("" if user_line(err) else _at(fn)) + raised(what, err)) from err


def _at(fn: Callable[..., object]) -> str:
    """``kernels.py:12: ``, where ``fn`` is defined, as a reason starts; empty where it
    has no Python code."""
    where = defined_at(fn)
    return f"{where}: " if where else ""


def _returned(fn: Callable[..., object], what: str, said: object, must: str) -> str:
    """Why what the user's ``fn`` (``what``) returned, ``said``, is no answer, where it
    is defined, and what it ``must`` return."""
    return (f"{_at(fn)}{what} returned {reprlib.repr(said)} ({type(said).__name__}); it "
            f"must return {must}")


def _reason(said: object, otherwise: Callable[[], Exception]) -> str:
    """``said`` where it is a reason, a string that says something; else raise what
    ``otherwise`` makes (the user's function returned no answer), made only then: it
    looks up where the function is defined, which a reason, asked at every config or
    trial, never needs."""
    if isinstance(said, str) and said.strip():
        return said
    raise otherwise()


def _count(what: str, count: Expr | Callable[[Problem], int], problem: Problem) -> int:
    """The declared ``bytes_moved=`` or ``flops=`` (``what``) of ``problem``; a function
    that returns no number >= 0 is :class:`~sweeper.kernels._base.CountError` at its line,
    an expression that comes to less than 0 one naming the expression."""
    if callable(count):
        return int(checked_count(what, count(problem), count))
    value = int(evaluate(count, {"n": problem.n, **dict(problem.dims),
                                 "itemsize": problem.itemsize}))
    if value < 0:
        raise CountError(f"the kernel's {what}, {count.text!r}, came to {value}; it must be "
                         f"a number >= 0")
    return value
