"""What a report says about how its numbers were made: the device's story (a GPU timed
with CUDA events, the Triton interpreter timed by the host clock, or a table replayed),
the factors the study varied and held fixed as the trials really ran them, and the
measurement record a reader needs to trust or redo a number."""

from __future__ import annotations

import re
import shlex
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import pandas as pd

from sweeper.busy import Busy
from sweeper.core._model import DICT, STRING
from sweeper.core._units import counted
from sweeper.space import format_size, parse_size
from sweeper.store import StudyMeta, TrialRecord
from sweeper.trial import TrialStatus
from sweeper.winners import EarlierShown, source_changes, unnamed_clause

CI_TEXT = "95% CI of the median from order statistics; outliers outside 1.5×IQR counted, " \
          "not dropped"


VERIFIED = ("Each measured trial: first launch timed apart (compile + first run), output "
            "verified on fresh random data with the output poisoned first, then ")
INPUTS = ("fresh random data per trial, seeded from the sampler seed and the trial number; "
          "output poisoned before the verified first launch")


class RunStory(NamedTuple):
    """How the study's numbers were made, in the words each report line needs.  Unless a
    device's story says otherwise, its inputs are fresh random data (:data:`INPUTS`), the
    device caps a footprint, and a cache mode means what it says."""

    kind: str              # cuda, interpret, replay, or a device plugin's name
    trial: str             # how each measured trial was made
    timer: str             # what a sample is
    gpu: str
    hardware: str
    measurement: str       # the measurement settings really applied
    ceilings: str          # why there are no ceilings, when there are none
    inputs: str = INPUTS
    capped: str = "capped by the device"   # why a footprint can be smaller than asked for
    cache: str = ""        # what a cache mode meant ("" where it is what it says)


def run_story(meta: StudyMeta) -> RunStory:
    """The story of the device the study ran on (``environment.device``; a replay is
    also known by the table it names); a CUDA GPU's where the study does not name its
    device, and a device plugin's own words (its note) for a device sweeper does not ship:
    a report imports no plugin."""
    env = meta.environment
    kind = "replay" if env.get("replay_table") else env.get("device", "cuda")
    return _STORIES.get(kind, _plugin_story)(meta, env)


def _plugin_story(meta: StudyMeta, env: dict[str, Any]) -> RunStory:
    device, note = env.get("device", "?"), meta.device_note
    measure_text = (meta.measure_text or "?")
    hardware = (f"{env.get('gpu', '?')} on {env.get('host', '?')} ({env.get('sms')} SMs, "
                f"{format_size(int(env.get('l2_bytes', 0) or 0))} L2)")
    return RunStory(
        kind=device, trial=VERIFIED + f"{measure_text}, timed by the {device} device",
        timer=f"median of the {device} device's samples" + (f" ({note})" if note else "") +
              f"; {CI_TEXT}", gpu=hardware, hardware=hardware, measurement=measure_text,
        cache=f"as the {device} device runs it",
        ceilings=f"None: the {device} device has no ceilings recorded.")


def _replay_story(meta: StudyMeta, env: dict[str, Any]) -> RunStory:
    rec = env.get("recorded", {})
    gpu, table, host = rec.get("gpu", "?"), env.get("replay_table", "?"), env.get("host", "?")
    l2 = int(rec.get("l2_bytes") or 0)
    when = f", {rec['created']}" if rec.get("created") else ""
    return RunStory(
        kind="replay",
        trial=(f"Timings replayed from `{table}` (recorded on {gpu}{when}): nothing was "
               "launched, timed or verified here; each config's samples are the table's"),
        timer=f"median of the samples recorded in {table}; {CI_TEXT}",
        inputs="none: nothing was launched",
        gpu=f"{gpu} (as recorded: driver {rec.get('driver') or '–'}); replayed on {host}",
        hardware=(f"{gpu} ({rec.get('sms', '?')} SMs, {format_size(l2)} L2), driver "
                  f"{rec.get('driver') or '–'}, as recorded in {table}; replayed on {host}"),
        measurement=f"replayed as recorded (the space asks for {meta.measure_text})",
        cache="as recorded",
        ceilings="None: a replay measures nothing, so there is nothing to hold against a "
                 "ceiling.")


def _interpret_story(meta: StudyMeta, env: dict[str, Any]) -> RunStory:
    measure_text = (meta.measure_text or "?")
    return RunStory(
        kind="interpret", trial=VERIFIED + f"{measure_text} by the host clock",
        timer="median of host-clock samples (the interpreter runs each launch to the end "
              f"before returning; nothing is flushed); {CI_TEXT}",
        gpu=(f"none: {env.get('gpu', 'the Triton interpreter')} on {env.get('host', '?')}; "
             "CPU timings of an interpreter, which mean nothing for a GPU"),
        hardware=(f"{env.get('gpu')} on {env.get('host', '?')} ({env.get('sms')} cores, "
                  f"{format_size(int(env.get('l2_bytes', 0) or 0))} L2)"),
        measurement=measure_text, capped="capped on the interpreter",
        cache="nothing is flushed on the interpreter",
        ceilings="None: ceilings are measured on a CUDA GPU (`sweeper calibrate`).")


def _cuda_story(meta: StudyMeta, env: dict[str, Any]) -> RunStory:
    measure_text, measure = (meta.measure_text or "?"), meta.measure
    return RunStory(
        kind="cuda", trial=VERIFIED + measure_text,
        timer="median of CUDA-event samples (one event pair per sample, L2 flushed outside "
              f"it when cold); {CI_TEXT}",
        gpu=(f"{env.get('gpu', '?')} UUID {env.get('gpu_uuid', '–')}, driver "
             f"{env.get('driver', '–')}; clocks, power and modes left as found (SM clock, "
             "temperature, power and throttle reasons recorded per trial; throttled chunks "
             "of samples discarded)"),
        hardware=(f"{env.get('gpu')} ({env.get('sms')} SMs, "
                  f"{format_size(int(env.get('l2_bytes', 0) or 0))} L2), driver "
                  f"{env.get('driver', '–')}, UUID {env.get('gpu_uuid', '–')}"),
        measurement=measure_text + (
            f"; batch {measure['batch']}" if measure.get("batch", 1) > 1 else "") +
            ("; CUDA graph" if measure.get("graph") else "") +
            (f"; abandon at {measure['abandon']}x the best" if measure.get("abandon")
             else ""),
        ceilings="Not measured for this GPU when the study ran (`sweeper calibrate`): no % "
                 "of ceiling and no roofline place.")


#: Each device's story, by the name studies record in ``environment.device``.
_STORIES = {"replay": _replay_story, "interpret": _interpret_story, "cuda": _cuda_story}


class SamplerShare(NamedTuple):
    """A sampler that proposed trials of the study: its name, the seeds it ran with, and
    how many trials it proposed (those the constraints ruled out aside)."""

    name: str
    seeds: list[Any]
    trials: int

    def text(self) -> str:
        """``tpe, seed 0`` (``seeds 0, 1`` where resumes changed its seed): as the report
        has always named the study's sampler."""
        seeds = ", ".join(map(str, self.seeds)) or "?"
        return f"{self.name}, seed{'s' if len(self.seeds) > 1 else ''} {seeds}"


def sampler_shares(meta: StudyMeta, trials: Sequence[TrialRecord]) -> list[SamplerShare]:
    """Each sampler that proposed the study's ``trials``, in the order it first did, with
    how many: one, unless a resume with ``--force`` changed the sampler.  A trial an older
    sweeper recorded names no sampler: it is the first one's (the sampler study.json was
    created with, the only one such a study names).  No trial: the study's sampler."""
    ran = meta.samplers or [meta.sampler]
    first = str(ran[0].get("name", "?"))
    counts: dict[str, int] = Counter(t.sampler or first for t in trials
                                     if t.status is not TrialStatus.INVALID)
    seeds: dict[str, list[Any]] = {}
    for spec in ran:
        named = seeds.setdefault(str(spec.get("name", "?")), [])
        if spec.get("seed", 0) not in named:
            named.append(spec.get("seed", 0))
    if not counts:
        counts = {str(meta.sampler.get("name", "?")): 0}
    return [SamplerShare(name, seeds.get(name, []), n) for name, n in counts.items()]


def factors(meta: StudyMeta, df: pd.DataFrame, story: RunStory,
            samplers: Sequence[SamplerShare] = ()) -> dict[str, list[tuple[str, str]]]:
    """What the study varied, and everything it held fixed (the seeds' single-variable
    discipline: a result is only about the varied axes if the rest is written down).
    Values are what the trials ran (their resolved configs), not only what the space
    asked for: a capped footprint says both.  The sampler, the kernel's source and the
    software are varied where a resume with ``--force`` changed them (``samplers``: each
    that proposed trials, with how many; the software: :func:`software_record`)."""
    axes = meta.axes
    fp = meta.fingerprint
    shown = {name: _axis_values(name, labels, df, story) for name, labels in axes.items()}
    varied = [(name, shown[name]) for name, labels in axes.items() if len(labels) > 1]
    fixed = [(name, shown[name]) for name, labels in axes.items() if len(labels) == 1]
    sampler = samplers[0].text() if samplers else \
        f"{meta.sampler.get('name', '?')}, seed {meta.sampler.get('seed', 0)}"
    forced = " (a resume with --force changed it)"
    if len(samplers) > 1:
        varied.append(("sampler", "; ".join(
            f"{s.text()}: {counted(s.trials, 'trial')}" for s in samplers) + forced))
    env = meta.environment
    kernel = ("kernel", f"{meta.kernel} (source {fp.get('kernel_source', '–')})")
    source_changed = bool(source_changes(meta))
    software = software_record(meta)
    software_changed = "; before: " in software
    if source_changed:
        varied.append((kernel[0], kernel[1] + forced))
    if software_changed:
        varied.append(("software", software + forced))
    fixed += [
        *([kernel] if not source_changed else []),
        ("measurement", story.measurement),
        ("inputs", story.inputs),
        *([("sampler", sampler)] if len(samplers) <= 1 else []),
        ("GPU", story.gpu),
        *([("software", f"CUDA {env.get('cuda', '–')}, torch {env.get('torch', '–')}, triton "
                        f"{env.get('triton', '–')}, sweeper {env.get('sweeper', '–')}")]
          if not software_changed else []),
        ("environment variables", fp.get("env") or "no TRITON_* or CUDA_VISIBLE_DEVICES set"),
    ]
    return {"varied": varied, "fixed": fixed}


def _axis_values(name: str, labels: Sequence[Any], df: pd.DataFrame, story: RunStory) -> str:
    """An axis's values as run: a footprint with the size its trials used where that
    differs from the label, a single grid with its number of programs, a cache mode with
    what it meant on the device."""
    ran = df[df["status"] != "invalid"]
    if name == "footprint" and not ran.empty:
        return ", ".join(_footprint(str(label), ran, story) for label in labels)
    if name == "grid" and len(labels) == 1 and not ran.empty:
        grids = ran["grid"].dropna().unique()
        if len(grids) == 1 and str(int(grids[0])) != str(labels[0]):
            return f"{labels[0]} (= {int(grids[0])} programs)"
    if name == "cache" and story.cache:
        return f"{', '.join(map(str, labels))} ({story.cache})"
    return ", ".join(map(str, labels))


def _footprint(label: str, ran: pd.DataFrame, story: RunStory) -> str:
    sizes = sorted({int(s) for s in ran.loc[ran["footprint_label"] == label, "footprint"]
                    if pd.notna(s)})
    try:
        asked = parse_size(label)
    except ValueError:
        return label
    if not sizes or sizes == [asked]:
        return label
    return f"{', '.join(map(format_size, sizes))} ({label} requested; {story.capped})"


def shown_source(shown: EarlierShown) -> str:
    """The earlier source of the kernel whose trials a report shows, as it names it."""
    return (f"{counted(shown.trials, 'trial')} of the latest earlier source of the kernel "
            "that measured any, " + (shown.source if shown.source else
                                     "one its trials do not name"))


def earlier_text(earlier: int, unknown: int, now: str | None) -> str:
    """The ``earlier`` trials not counted as measured on the kernel's source ``now``, of
    which ``unknown`` name no source and may have run on this one (A, B, then A again:
    :func:`~sweeper.winners.unnamed_clause`)."""
    return (f"{counted(earlier, 'trial')} measured on an earlier source of the kernel than "
            f"its source now ({now}){unnamed_clause(earlier, unknown)}")


def record_rows(meta: StudyMeta, df: pd.DataFrame, picks: pd.DataFrame,
                tied: dict[int, int], metric: str, rate_unit: str, story: RunStory,
                earlier_source: int = 0, left_out: bool = False,
                shown_earlier: EarlierShown | None = None, unknown_source: int = 0
                ) -> list[tuple[str, str]]:
    """The seed's measurement record: what a reader needs to trust or redo the number.
    ``tied``: per final's winner, how many others were tied with it; ``earlier_source``:
    how many trials ran on an earlier source of the kernel (:class:`~sweeper.winners.Sources`),
    which no winner is chosen from, and which the report's tables leave out where
    ``left_out`` (trials on the source now are there to show), or show those of
    ``shown_earlier`` only (none was measured on the source now yet); ``unknown_source``:
    how many of them name no source where which one ran them is unknown
    (:meth:`~sweeper.winners.Sources.unknown`)."""
    env = meta.environment
    conclusion = "; ".join(
        f"{row['problem']}: #{row['number']} at {row[metric]:.4g} {rate_unit} "
        + (f"({tied[row['number']]} tied within noise)" if row["number"] in tied
           else "(no interleaved final)")
        for _, row in picks.iterrows()) or "no config was measured"
    return [
        ("problems (dtype, size, bytes a launch moves)", problem_sizes(df)),
        ("hardware", story.hardware),
        ("software", software_record(meta)),
        ("command", f"`{meta.command or '?'}` (reproduce: `{reproduce_command(meta)}`)"),
        *forced_rows(meta),
        *([("earlier kernel source", earlier_text(earlier_source, unknown_source,
                                                   meta.kernel_source_hash)
            + ": no winner, final or export is chosen from them"
            + ("; the tables and heatmaps here leave them out (`trials.jsonl` keeps them)"
               if left_out and not shown_earlier else "")
            + (f"; none was measured on the source now yet: the tables and heatmaps here "
               f"show the {shown_source(shown_earlier)}"
               + (" (`trials.jsonl` keeps the others)"
                  if shown_earlier.trials < earlier_source else "")
               if shown_earlier else ""))] if earlier_source else []),
        ("statistics", story.timer),
        ("stopping rule", story.measurement),
        ("raw samples", "`trials.jsonl` in this folder (every sample of every trial)"
         if story.kind != "replay" else
         f"`trials.jsonl` in this folder (the samples replayed from "
         f"{env.get('replay_table', 'the table')})"),
        ("conclusion", conclusion),
        *([("busy in the last run", Busy.from_json(meta.last_run["gpu_busy"]).line())]
          if meta.last_run.get("gpu_busy") else []),
    ]


def software_record(meta: StudyMeta) -> str:
    """The software the study's trials ran with: its latest run's, then each earlier one a
    resume with ``--force`` replaced (kept in its ``forced`` entry, where recorded), with
    the resume that ended it, where it differed from the one after it."""
    def text(env: Mapping[str, Any]) -> str:
        return (f"CUDA {env.get('cuda', '–')}, torch {env.get('torch')}, triton "
                f"{env.get('triton')}, sweeper {env.get('sweeper')}, Python "
                f"{env.get('python')}")

    now = text(meta.environment)
    replaced = [(entry.get("when", "?"), text(entry["environment"])) for entry in meta.forced
                if isinstance(entry.get("environment"), dict)]
    after = [*(t for _, t in replaced[1:]), now]        # what each one was replaced by
    earlier = [f"{was} (until the resume with --force of {when})"
               for (when, was), then in zip(replaced, after, strict=False) if was != then]
    return "; before: ".join([now, *reversed(earlier)])


#: A hash in a fingerprint change (``'823ee27b…'``): such a change is named by its key alone.
_HASH = re.compile(r"'[0-9a-f]{16,}'")


def forced_rows(meta: StudyMeta) -> list[tuple[str, str]]:
    """One record row per resume with ``--force`` (``study.json``'s ``forced``): when it
    was, and what it changed (``key: old -> new``, a change of a hash by its key alone),
    for the study's trials before and after it were measured under different settings."""
    rows = []
    for entry in meta.forced:
        said = entry.get("changed", [])
        changed = [str(c).split(":", 1)[0] if _HASH.search(str(c)) else str(c)
                   for c in (said if isinstance(said, list) else [said])]
        rows.append((f"resumed with --force, {entry.get('when', '?')}",
                     f"changed {'; '.join(changed) or '?'} (trials before and after it "
                     "were measured under different settings)"))
    return rows


def problem_sizes(df: pd.DataFrame) -> str:
    """Each problem the trials ran, by its dtype and its dimensions (else its footprint),
    with the bytes one launch moves: the rate times the median of a measured trial, every
    input and the output.  A footprint alone says too little: it is what the kernel
    sizes a problem by, one input of several where there are several (a matmul's A)."""
    sized = df[df["footprint"].notna()]
    parts = []
    for (dtype, footprint, dims), sub in sized.groupby(["dtype", "footprint", "dims"],
                                                       sort=True, dropna=False):
        text = f"{dtype} {dims or format_size(int(footprint))}"
        moved = sub.loc[(sub["status"] == "ok") & (sub["gbps"] > 0), ["gbps", "median_ms"]]
        if not moved.empty:
            row = moved.iloc[0]
            text += f" ({approx_size(float(row['gbps']) * float(row['median_ms']) * 1e6)} " \
                    "moved a launch)"
        parts.append(text)
    return ", ".join(parts) or "–"


def approx_size(nbytes: float) -> str:
    """``nbytes`` in the largest unit it reaches, to three significant digits (a size
    worked out from a rate and a time is whole only to its rounding): ``96MiB``,
    ``1.5GiB``."""
    from sweeper.core._expr import UNITS

    unit, scale = max(((u, s) for u, s in UNITS.items() if s <= max(nbytes, 1)),
                      key=lambda us: us[1])
    return f"{float(f'{nbytes / scale:.3g}'):g}{unit}"


def reproduce_command(meta: StudyMeta) -> str:
    """The ``sweeper run`` command that reproduces a study from its study.json: its space
    file (or ``--from-autotune MODULE:KERNEL``, two arguments), the device as it was
    opened (a replay by its table) and the study's name, shell-quoted.  A space given to
    :func:`sweeper.run` as text or a dict has no file to name (its pseudo name
    ``<dict>`` is none): the Python call that runs the text the study keeps, which
    resumes it."""
    env = meta.environment
    device = env.get("opened_as") or meta.fingerprint.get("device", "cuda")
    if env.get("replay_table"):
        device = f"replay:{env['replay_table']}"
    path = meta.space_path or "SPACE"
    if path in (STRING, DICT):
        return (f"sweeper.run(sweeper.load_study({meta.study!r}).space, device={device!r}, "
                f"study={meta.study!r})")
    # the space of a --from-autotune run is recorded as that option and its argument
    space = path.split(" ", 1) if path.startswith("--from-autotune ") else [path]
    return shlex.join(["sweeper", "run", *space, "--device", device, "--study", meta.study])
