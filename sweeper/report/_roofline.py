"""Compute a roofline (pure pandas): the winners of one GPU's studies against its roofs.
:mod:`._draw` only draws it.

What a roofline promises a reader:

- x is a winner's arithmetic intensity, the FLOPs over the bytes its kernel declares for
  one launch of its problem (``Kernel.flops``, ``Kernel.bytes_moved``, as recorded with
  each trial); y its FLOP/s at the median the report gives it (the interleaved final's,
  else the sweep's).  Both axes are logarithmic.
- Solid roofs are what ``sweeper calibrate`` measured on the GPU: the memory roof is torch
  ``copy_``'s DRAM bandwidth (cold, largest footprint), a compute roof ``torch.matmul``'s
  rate on the dtype (float32 held against TF32, as Triton's ``tl.dot`` computes it).
  Dashed roofs are the physical bounds (:mod:`sweeper.bounds`).  Either may be missing;
  with neither there is no roofline and the command refuses.
- A winner's fraction of the roof is its FLOP/s over the lower of the compute roof and
  intensity × the memory roof, taking the calibrated roof where there is one, else the
  bound; the fraction of the physical roofline is given beside it.  Each roof says what
  it is and where it comes from (:attr:`Roof.source`).  A fraction above 100 % is said in
  words wherever it is shown (:meth:`Roofs.above`): a calibrated roof is a measurement
  (a kernel may beat torch), not a limit; above a physical bound, what let it (the L2
  serving part of the traffic, or the timing margin the bound check allows).
- A winner with no FLOPs (copy) has no place on a FLOP/s axis: it is listed beside the
  plot with its GB/s as a fraction of the memory roof, never drawn at a made-up
  intensity; so is one that declares FLOPs but no bytes.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

import pandas as pd

from sweeper import ceilings as calibrated
from sweeper.bounds import L2_SERVES, MARGIN, Bounds
from sweeper.ceilings import Ceilings
from sweeper.core import format_size
from sweeper.errors import SweeperError
from sweeper.finals import problem_of
from sweeper.report._tables import problem_key, trials_frame
from sweeper.store import StudyMeta, StudyStore
from sweeper.winners import Pick, Winners

#: Columns of :attr:`Roofline.points`.
POINT_COLUMNS = ["study", "kernel", "dtype", "problem", "number", "intensity", "flop_s",
                 "byte_s", "roof_flop_s", "roof", "pct_roof", "pct_physical", "above"]
#: What the list beside the plot says of kernels without a place on it.
BESIDE = "winners without FLOPs (copy) are listed beside the plot, as % of the memory roof"


class Roof(NamedTuple):
    """One roof: bytes/s (``memory``) or FLOP/s (``compute``), measured or physical."""

    name: str
    kind: str                  # "memory" | "compute"
    per_s: float
    calibrated: bool           # measured by sweeper calibrate (solid), else a bound (dashed)
    source: str = ""           # what it is and where it comes from


class Roofline(NamedTuple):
    """The roofs of one GPU and its studies' winners."""

    gpu: str
    roofs: list[Roof]
    points: pd.DataFrame       # POINT_COLUMNS: one row per winner with FLOPs and bytes
    beside: list[str]          # one line per winner that has no place on the plot
    ceilings_from: str         # where the calibrated roofs come from ("" when none)

    @property
    def key(self) -> str:
        """What the solid and dashed roofs are, as the plot and the command say it: no
        word of dashed bounds where the studies recorded none."""
        solid = ("solid: measured by " + self.ceilings_from if self.ceilings_from else
                 "no calibrated ceilings")
        dashed = ("dashed: physical bounds" if any(not r.calibrated for r in self.roofs)
                  else "no physical bounds (none recorded)")
        return f"{solid}; {dashed}"

    @property
    def caption(self) -> str:
        """What the roofs are, then the winners listed beside the plot (report.html's)."""
        return "; ".join([self.key, *self.beside])


class Winner(NamedTuple):
    """What the roofline needs of one problem's chosen config."""

    study: str
    kernel: str
    dtype: str
    problem: str
    number: int
    flops: float               # per launch
    nbytes: float              # per launch
    seconds: float             # the median it was chosen on


def winner_work(study: str, kernel: str, df: pd.DataFrame, picks: Iterable[Pick]
            ) -> list[Winner]:
    """Each chosen config's work per launch and median; ``df`` is the study's
    :func:`trials_frame`."""
    by_number = df.set_index("number")
    out = []
    for pick in sorted(picks, key=lambda p: problem_of(p.trial)):
        t = by_number.loc[pick.trial.number]
        swept = t["median_ms"] * 1e-3
        out.append(Winner(study, kernel, str(t["dtype"]), problem_key(t), pick.trial.number,
                          float(t["gflops"]) * 1e9 * swept, float(t["gbps"]) * 1e9 * swept,
                          pick.median_ms * 1e-3))
    return out


def study_winners(store: StudyStore) -> tuple[StudyMeta, list[Winner]]:
    """A recorded study's meta and its winners (reads only study.json and the journal)."""
    meta = store.study_meta()
    trials, _ = store.records()
    picks = Winners.of(store).picks(trials).values()
    df = trials_frame(trials, meta.param_axes)
    return meta, ([] if df.empty else winner_work(meta.study, meta.kernel, df, picks))


def limits(metas: Sequence[StudyMeta]) -> tuple[Ceilings | None, Bounds | None, str]:
    """The newest ceilings of the studies' GPU (their snapshots, and the ceilings cache for
    that GPU and driver) with where they come from, and the first physical bounds any study
    recorded."""
    found: list[tuple[Ceilings, str]] = []
    for meta in metas:
        if meta.ceilings:
            found.append((Ceilings.from_json(meta.ceilings), f"study {meta.study}"))
        env = meta.environment
        if env.get("gpu_uuid"):
            cached = calibrated.load(env["gpu"], env["gpu_uuid"], env.get("driver", ""))
            if cached is not None:
                found.append((cached, "the ceilings cache"))
    newest = max(found, key=lambda c: c[0].measured, default=None)
    bounds = next((Bounds.from_json(m.bounds) for m in metas
                   if m.bounds and Bounds.from_json(m.bounds).all()), None)
    return (newest[0] if newest else None, bounds,
            f"sweeper calibrate, {newest[0].measured}, from {newest[1]}" if newest else "")


def roofline(gpu: str, chosen: Sequence[Winner], ceilings: Ceilings | None,
             bounds: Bounds | None, ceilings_from: str = "") -> Roofline:
    """The roofs of ``gpu`` and ``chosen`` placed against them; refused (one line) when
    there are neither ceilings nor physical bounds to draw."""
    if ceilings is None and (bounds is None or not bounds.all()):
        raise SweeperError(
            f"no roofline for {gpu}: neither ceilings nor physical bounds are known for it "
            "(run `sweeper calibrate` on it; studies run on a CUDA device record its bounds)")
    roofs = Roofs(ceilings, bounds, ceilings_from)
    rows, beside = [], []
    for w in chosen:
        if w.flops > 0 and w.nbytes > 0:
            rows.append(roofs.place(w))
        else:
            beside.append(roofs.describe(w))
    points = pd.DataFrame(rows, columns=POINT_COLUMNS)
    dtypes = list(dict.fromkeys(points["dtype"])) or (list(ceilings.matmul) if ceilings
                                                      else [])
    return Roofline(gpu, roofs.drawn(dtypes), points, beside, ceilings_from)


class Roofs:
    """The memory and compute roofs of one GPU: each as a pair (calibrated, physical
    bound), either ``None`` where it is not known; ``ceilings_from`` says where the
    ceilings come from."""

    def __init__(self, ceilings: Ceilings | None, bounds: Bounds | None,
                 ceilings_from: str = "") -> None:
        self.ceilings, self.bounds = ceilings, bounds
        self.measured = "measured by " + (ceilings_from or (
            f"sweeper calibrate, {ceilings.measured}" if ceilings else ""))
        gbps = ceilings.dram_bandwidth() if ceilings and ceilings.copy else None
        dram = bounds.dram if bounds else None
        self.memory = (Roof(f"DRAM copy {gbps:.0f} GB/s", "memory", gbps * 1e9, True,
                            f"torch copy_'s bandwidth, cold, at its largest footprint, "
                            f"{self.measured}")
                       if gbps is not None else None,
                       Roof(f"DRAM bound {dram.rate_text()}", "memory", dram.per_s, False,
                            f"a physical bound, from {dram.how}")
                       if dram else None)

    def compute(self, dtype: str) -> tuple[Roof | None, Roof | None]:
        """The compute roofs of ``dtype``: the calibrated matmul rate, and the FLOP bound."""
        peak = self.ceilings.matmul_peak(dtype) if self.ceilings else None
        bound = self.bounds.flops.get(dtype) if self.bounds else None
        held = f" (as {peak[0]})" if peak and peak[0] != dtype else ""
        return (Roof(f"{dtype} matmul {peak[1]:.4g} TFLOP/s{held}", "compute", peak[1] * 1e12,
                     True, f"torch.matmul's rate at 8192³ on {peak[0]}, {self.measured}")
                if peak else None,
                Roof(f"{dtype} bound {bound.rate_text()}", "compute", bound.per_s, False,
                     f"a physical bound, from {bound.how}")
                if bound else None)

    def place(self, w: Winner) -> dict[str, Any]:
        """A winner with FLOPs and bytes as a point of the plot."""
        intensity = w.flops / w.nbytes
        flop_s = w.flops / w.seconds
        compute = self.compute(w.dtype)
        roof, limiting = attainable(intensity, _first(self.memory), _first(compute))
        physical, _ = attainable(intensity, self.memory[1], compute[1])
        pct_roof, pct_physical = 100 * flop_s / roof, 100 * flop_s / physical
        return {"study": w.study, "kernel": w.kernel, "dtype": w.dtype, "problem": w.problem,
                "number": w.number, "intensity": intensity, "flop_s": flop_s,
                "byte_s": w.nbytes / w.seconds, "roof_flop_s": roof,
                "roof": f"{limiting.kind}: {limiting.name}" if limiting else "",
                "pct_roof": pct_roof, "pct_physical": pct_physical,
                "above": self.above(w, pct_roof, limiting, pct_physical)}

    def describe(self, w: Winner) -> str:
        """A winner the plot has no place for, as one line of the list beside it."""
        head = f"{w.kernel} {w.problem} (#{w.number}, {w.study})"
        if w.nbytes > 0:
            return (f"{head}: 0 FLOP, {w.nbytes / w.seconds / 1e9:.0f} GB/s"
                    f"{self._share(w, w.nbytes / w.seconds, self.memory)}")
        if w.flops > 0:
            return (f"{head}: {w.flops / w.seconds / 1e12:.4g} TFLOP/s"
                    f"{self._share(w, w.flops / w.seconds, self.compute(w.dtype))}; it "
                    "declares no bytes, so it has no intensity")
        return f"{head}: declares neither bytes nor FLOPs, so it has no place on a roofline"

    def _share(self, w: Winner, rate: float, roofs: tuple[Roof | None, Roof | None]) -> str:
        """``rate`` as a share of the roof of its kind (and of the physical bound, where
        that roof is a measurement), and why either share passes 100 %, for
        :meth:`describe`."""
        roof = _first(roofs)
        if roof is None:
            return ""
        pct = 100 * rate / roof.per_s
        out = f", {pct:.1f}% of the {roof.kind} roof ({roof.name})"
        bound = roofs[1]
        pct_physical = 100 * rate / bound.per_s if bound else math.nan
        if bound and roof is not bound:
            out += f", {pct_physical:.1f}% of the physical bound ({bound.name})"
        above = self.above(w, pct, roof, pct_physical)
        return f"{out}: {above}" if above else out

    def above(self, w: Winner, pct_roof: float, roof: Roof | None,
              pct_physical: float) -> str:
        """Why ``w`` reads more than 100 % of its ``roof`` or of the physical roofline, in
        words, each reason headed by what it passed (``above the measured roof: ...``);
        empty where it reads neither."""
        said = []
        if roof is not None and roof.calibrated and pct_roof > 100:
            said.append(f"above the measured roof: the roof is a measurement ({roof.source}), "
                        "not a physical limit")
        if pct_physical > 100 and self.bounds is not None:
            said.append(past_bound(w, self.bounds))
        return "; ".join(said)


    def drawn(self, dtypes: Sequence[str]) -> list[Roof]:
        """The roofs to draw: memory first, then each dtype's compute roofs; dtypes that
        share a roof share its line (their names joined)."""
        roofs = [r for r in self.memory if r]
        compute: dict[tuple[float, bool], list[Roof]] = {}
        for roof in (r for dtype in dtypes for r in self.compute(dtype) if r):
            compute.setdefault((roof.per_s, roof.calibrated), []).append(roof)
        for same in compute.values():
            names = ", ".join(r.name.split(" ", 1)[0] for r in same)
            roofs.append(same[0]._replace(name=names + " " + same[0].name.split(" ", 1)[1]))
        return roofs


def past_bound(w: Winner, bounds: Bounds) -> str:
    """Why ``w`` passes a physical bound of ``bounds``: what the bound check allows it, or
    that the check would fail it."""
    limit = bounds.fastest(int(w.nbytes), int(w.flops), w.dtype)
    if limit is None or w.seconds >= limit.seconds:
        return (f"above the DRAM bound: up to {L2_SERVES}× the {format_size(bounds.l2_bytes)} "
                "L2 of a launch's traffic need not pass through DRAM, as the bound check "
                "allows")
    if w.seconds * (1 + MARGIN) >= limit.seconds:
        return (f"above the physical bound: by less than the {MARGIN:.0%} the bound check "
                "allows for the timer's resolution and clock jitter")
    return ("beyond the physical bound: the bound check fails a trial this fast as "
            "impossible, so this median was not checked against it")


def _first(roofs: tuple[Roof | None, Roof | None]) -> Roof | None:
    """The calibrated roof where it was measured, else the physical bound."""
    return roofs[0] or roofs[1]


def attainable(intensity: float, memory: Roof | None, compute: Roof | None
               ) -> tuple[float, Roof | None]:
    """(FLOP/s, the roof that limits) at ``intensity`` under these roofs; NaN and ``None``
    with neither."""
    by_memory = intensity * memory.per_s if memory else math.inf
    if memory and (compute is None or by_memory < compute.per_s):
        return by_memory, memory
    if compute:
        return compute.per_s, compute
    return math.nan, None


def studies_roofline(stores: Sequence[StudyStore], gpu: str | None = None) -> Roofline:
    """The roofline of ``stores``' winners (only those measured on ``gpu`` when given);
    refused (one line) when the studies span GPUs, none is of ``gpu``, or their GPU has
    neither ceilings nor physical bounds."""
    by_gpu: dict[str, list[tuple[StudyMeta, list[Winner]]]] = {}
    for meta, chosen in map(study_winners, stores):
        by_gpu.setdefault(meta.gpu, []).append((meta, chosen))
    if gpu is not None:
        if gpu not in by_gpu:
            raise SweeperError(f"--gpu {gpu!r}: no study measured on it; the studies' GPUs: "
                               f"{', '.join(sorted(by_gpu)) or 'none'}")
        by_gpu = {gpu: by_gpu[gpu]}
    if not by_gpu:
        raise SweeperError("no study to place on a roofline")
    if len(by_gpu) > 1:
        named = "; ".join(f"{g}: {', '.join(m.study for m, _ in found)}"
                          for g, found in sorted(by_gpu.items()))
        raise SweeperError(f"the studies were measured on {len(by_gpu)} GPUs ({named}); a "
                           "roofline is of one GPU: name its studies, or pick it with --gpu")
    (name, found), = by_gpu.items()
    ceilings, bounds, source = limits([meta for meta, _ in found])
    absent = next((why for meta, _ in found if meta.bounds
                   for why in Bounds.from_json(meta.bounds).absent), None)
    if ceilings is None and bounds is None and absent is not None:
        # a replay or the interpreter: `sweeper calibrate` cannot help there
        raise SweeperError(f"no roofline for {name}: {absent}; a roofline needs studies "
                           "measured on a CUDA GPU, which record its physical bounds")
    return roofline(name, [w for _, chosen in found for w in chosen], ceilings, bounds, source)
