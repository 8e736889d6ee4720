"""``sweeper plan``, ``sweeper schema`` and ``sweeper kernels``: what a space file holds and
may name, before anything runs.  None launches a kernel or imports torch: built-ins are
read from their declarations, the CUDA device's facts from its driver; ``plan`` imports
no user kernel, ``kernels`` only the installed or named ones."""

from __future__ import annotations

import argparse
from typing import Any

from sweeper.cli._inputs import space_source
from sweeper.core._units import counted
from sweeper.engine import space_and_device
from sweeper.engine._inputs import (
    budgeted,
    needs_gpu,
    planned_kernel,
    refuse_at_configs,
    refuse_gpu_only,
)
from sweeper.outcome import killed_from_outside


def cmd_plan(args: argparse.Namespace) -> int:
    """``sweeper plan``: how many configs the space holds, how many constraints remove and
    why, and what a run would measure and cost under ``--trials`` and ``--time`` (else the
    space's budget), without launching anything; a space with no valid config fails as
    ``run`` would, and so does a kernel that runs on a CUDA GPU only on a device that cannot
    run it, or whose declared model or launch arguments fail at a config on the device
    (run's checks and messages, before anything is printed; a kernel whose module plan
    does not import declares neither to it)."""
    from sweeper.engine._costs import resumed_shape
    from sweeper.engine._lines import shrunk_lines
    from sweeper.kernels import BUILTINS
    from sweeper.measure import DEFAULT_DUTY
    from sweeper.plan import estimate_words, plan_of, run_shape

    space, device = space_and_device(space_source(args), args.device, for_plan=True)
    space = budgeted(space, args.trials, args.time)      # --trials, --time: as run reads them
    refuse_gpu_only(space.kernel, needs_gpu(space), device)
    refuse_at_configs(space, planned_kernel(space), device)     # run's refusals of the kernel
    facts = device.facts()
    store, kept, again, forced = _studied(space, device, args)
    plan, builtin = plan_of(space, device, resumed_shape(
        run_shape(space, device, report=True, startup=True), store, kept, again))
    axes = " × ".join(f"{name} {len(labels)}" for name, labels in space.choices().items())
    print(f"space {space.path}: {counted(plan.size, 'config')} ({axes})")
    print(f"  {_roles(space)}")
    removed = sum(plan.removed.values())
    print(f"constraints and values remove {removed}; {plan.valid} valid")
    for reason, count in plan.removed.most_common():
        print(f"  {count:6d}  {reason}")
    for line in shrunk_lines(space, facts):
        print(f"  {line}")
    if plan.valid == 0:             # what removed them is said above; nothing to estimate
        raise plan.ruled_out.nothing_left(plan.size)
    budget = f" (budget: {space.budget.trials} trials)" if space.budget.trials else ""
    binds = f" of {plan.todo}" if plan.trials < plan.todo else ""   # the trial budget binds
    print(f"would measure {plan.trials}{binds}{budget} on {facts.name}" + (
        f", {plan.again} of them first to measure again ({killed_from_outside(plan.again)})"
        if plan.again else "") + (
        f"; the study in {store.root} keeps {_kept_text(kept, plan.done_here)}"
        if kept else ""))
    if forced:
        print(f"  (--force: the study was measured with other settings, "
              f"{', '.join(c.partition(':')[0] for c in forced)}; the run adds to it)")
    if device.assumed:
        print(f"  ({device.assumed})")
    a = plan.assumptions
    peaks = ", ".join(f"{d} {v / 1e12:g}" for d, v in device.plan_costs.flops.items())
    launches = (f"a launch {a['launch_s'] * 1e3:g} ms, {a['program_s'] * 1e3:g} ms a program "
                f"and {a['op_s'] * 1e3:g} ms a tensor operation of its body"
                if a["op_s"] else f"launches of at least {a['launch_s'] * 1e6:g} us, "
                f"{a['bandwidth'] / 1e9:g} GB/s{f', TFLOP/s {peaks}' if peaks else ''}")
    by_bytes, by_flops, why = plan.gpu_scale
    scaled = [f"a launch bound by its FLOPs {a['flop_scale']:g}× that"] \
        if a["flop_scale"] != 1.0 else []
    if why:       # a GPU other than the one the figures were read on (gpu_scale)
        scaled.append(f"on {facts.name} {by_bytes:.3g}× {'that again' if scaled else 'that'}"
                      f" by its bytes" + (f" and {by_flops:.3g}× by its FLOPs"
                                          if by_flops != 1.0 else "") + f" ({why})")
    if scaled:
        launches += f"; {'; '.join(scaled)}, until a run here measures the kernel's"
    head, lead, _ = estimate_words(plan, space.budget.time_s, per_trials=False)
    print(f"estimated time: {head} ({lead}{plan.parts_text()}; assumes "
          f"{a['compile_s']:.3g} s a trial beyond its launches, {launches})")
    if plan.binaries:
        print(f"  {_binaries_text(plan, space)}")
    if device.measures_gpu or device.replays:
        print(f"  a power-bound kernel adds a {DEFAULT_DUTY.seconds:g} s cool-down per finalist "
              "and round (measure.duty: auto)")
    last = _last_run(store)
    if last is not None:
        print(last(plan.trials))
    if device.replays:
        print("  (as on the GPU the table was recorded on; the replay itself takes seconds)")
    if space.kernel in BUILTINS and not builtin:
        print(f"not checked: the bytes kernel {space.kernel} moves (its tensors are built "
              "when it runs); the estimate counts launches only")
    elif not builtin:
        print(_unimported_note(space))
    op = dict(space.kernel_options).get("op") if space.kernel == "torch-op" else None
    if op is not None:              # imported when the run allocates
        print(f"not checked: that the op {op} exists (plan imports no torch; `sweeper run` "
              "refuses an op it cannot import before measuring)")
    return 0


def _kept_text(kept: list[Any], here: frozenset[tuple[str, ...]]) -> str:
    """The study's ``kept`` trials as the plan counts them: those of this space's configs
    (``here``, their keys), not measured again, and apart those of configs outside it (run
    with other values: ``-p``, an edited space), which this space's run does not measure
    either."""
    inside = sum(t.key() in here for t in kept)
    outside = len(kept) - inside
    return f"{counted(inside, 'trial')} of this space, not measured again" + (
        f" (and {outside} of configs outside it)" if outside else "")


def _binaries_text(plan: Any, space: Any) -> str:
    """``20 binaries: 4 compiled on this machine already (a load each), 16 to compile
    (Triton's, per problem, block and constexprs)``."""
    kind = ("NVRTC's, per cache key" if needs_gpu(space) else
            "Triton's, per problem, block and constexprs")
    return (f"{counted(plan.binaries, 'binary', 'binaries')}: {plan.cached} compiled on "
            f"this machine already (a load each), {plan.binaries - plan.cached} to compile "
            f"({kind})")


def _studied(space: Any, device: Any, args: argparse.Namespace
             ) -> tuple[Any, list[Any], list[Any], list[str]]:
    """The study this space runs into under ``--studies-dir`` (None where it cannot be
    read), the trials it keeps, which a ``run`` would resume from: its estimate
    measures none of them again, as the run's own does (those of a kernel source before a
    resume with ``--force`` it does: :meth:`~sweeper.winners.Sources.done`), the choices
    of its trials to be measured again (``retry``: their worker process was killed from
    outside), which the run measures first, and what differs from the settings it was
    measured with (``--force``).  Where they differ without ``--force``, run's refusal (a
    StudyError): the run would measure nothing."""
    from sweeper.errors import SweeperError
    from sweeper.options import study_folder
    from sweeper.store import StudyStore
    from sweeper.study import check_resumable, planned_fingerprint, study_name

    store = StudyStore(study_folder(args.studies_dir, study_name(space, device)))
    if not store.exists():
        return store, [], [], []
    from sweeper.winners import Sources

    try:
        sources = Sources.of(store.study_meta())
        records = store.records()[0]
    except SweeperError:       # unreadable: the run will say why
        return None, [], [], []
    wanted = planned_fingerprint(space, device)
    changed = check_resumable(store, wanted, space, args.force,
                              device.planned_environment().get("replay_table"), planned=True,
                              facts=device.facts())
    # what ran on a source before the edit is measured again (not one respelled since:
    # study.source_respelled, which the resume reads as the source now)
    if any(c.startswith("kernel_source:") for c in changed):
        sources = sources.edited(wanted["kernel_source"])
    again = [t.choice for t in sources.again(records)]
    return store, sources.done(records), again, changed


def _last_run(store: Any) -> Any:
    """Where the study this space runs into was run before (``store``): a line saying its
    last run's seconds per trial and what the plan's trials take at that rate (a callable
    of the trials); ``None`` where it was not run, or kept no such figure."""
    from sweeper.errors import SweeperError
    from sweeper.plan import seconds_text

    try:
        last = store.study_meta().last_run if store is not None and store.exists() else {}
    except SweeperError:
        return None
    wall, measured = last.get("sweep_s"), last.get("measured")
    if not isinstance(wall, (int, float)) or not isinstance(measured, int) or measured <= 0:
        return None
    rate = wall / measured
    return lambda trials: (f"the study's last run ({store.root}): {measured} trials in "
                           f"{seconds_text(wall)}, {rate:.2f} s a trial with its finals" + (
                               f": {trials} trials at that rate take "
                               f"{seconds_text(rate * trials)}" if trials else ""))


def cmd_schema(args: argparse.Namespace) -> int:
    """``sweeper schema``: print the space file's JSON Schema, or write it to ``--output``,
    for an editor's YAML language server to check a space file as it is typed."""
    import json

    from sweeper.space._schema import space_schema

    text = json.dumps(space_schema(), indent=2) + "\n"
    if args.output:
        from sweeper.fsio import atomic_write

        atomic_write(args.output, text)
        print(f"wrote {args.output}")
    else:
        print(text, end="")
    return 0


def cmd_kernels(args: argparse.Namespace) -> int:
    """``sweeper kernels``: every kernel the registry knows, or those named, with its
    meta-parameters, problem dimensions, defaults, headline, baseline and what it runs on."""
    import json

    from sweeper.kernels._catalog import catalog, render

    entries = catalog(args.names)
    if args.json:
        print(json.dumps([e.to_dict() for e in entries], indent=2))
    else:
        print("\n\n".join(render(e) for e in entries))
    return 0


def _unimported_note(space: Any) -> str:
    """What ``plan`` could not check of a user kernel it did not import: with everything
    its source declares read, only the values' checks and the bytes it moves; else also
    what could not be read, so the meta-parameters and defaults it stood in for; and
    where its declaration gives ``refuse=``, that the configs it turns down are counted
    among those measured."""
    from sweeper import plugins
    from sweeper.kernels._interpreted_ops import LaunchOps
    from sweeper.space import AxisRole

    read = plugins.kernel_declaration(space.kernel, user_code=False)
    meta = ", ".join(a.name for a in space.axes if a.role is AxisRole.META) or "none"
    head = f"not checked: kernel {space.kernel} was not imported (plan runs no user code)"
    ops = getattr(read, "interpreted_ops", None)      # counted from the Triton source
    counts = "launches only," if not isinstance(ops, LaunchOps) else \
        f"its launches and, on the interpreter, the tensor operations each program of " \
        f"{ops.named} runs, counted from its source,"
    tail = (f"the estimate counts {counts} not the bytes it moves. `sweeper run` checks "
            "all of it before measuring")
    refusal = getattr(read, "unchecked_refusal", None)     # code, never run here
    turned_down = "" if refusal is None else \
        f" nor which configs {refusal} turns down (counted here among those it would measure)"
    unread = getattr(read, "unread", ())
    declaration = getattr(read, "unchecked_declaration", None)    # checked as imported, else
    checks = "" if declaration is None else \
        f", nor the checks importing it makes of its declaration ({declaration})"
    if not unread:
        return (f"{head}; its declaration was read from its source (dimensions "
                f"{', '.join(space.shape.names)}; meta-parameters {meta}; options "
                f"{', '.join(read.options) or 'none'}), but not its checks of values"
                f"{checks}{turned_down}: {tail}")
    return (f"{head}: its meta-parameters ({meta}) and their values, and its defaults for "
            f"axes the file leaves out (the base Kernel's were used where its source "
            f"could not be read: {'; '.join(unread)}){turned_down.replace(' nor', ', and')}; "
            f"{tail}")


def _roles(space: Any) -> str:
    """``launch: grid, block; problem: dtype, M, N; meta-parameters: BLOCK``: the axes by
    the role each plays, so a kernel's dimensions read as its problem, never as
    meta-parameters."""
    from sweeper.space import AxisRole

    groups: dict[str, list[str]] = {}
    for axis in space.axes:
        role = "meta-parameters" if axis.role is AxisRole.META else axis.role.value
        groups.setdefault(role, []).append(axis.name)
    return "; ".join(f"{role}: {', '.join(names)}" for role, names in groups.items())
