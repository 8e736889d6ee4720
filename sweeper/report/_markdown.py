"""``report.md``: the tables :func:`sweeper.report.study_tables` computed, as Markdown.

A table with nothing in it is replaced by a sentence that says what that means, or left
out where nothing needs saying; a column with no value in any row is left out (a replay
has no first-run times, a GPU without power readings no GB/J).

Text from the study (labels, names, reasons, the environment) is shown as text and nothing
else: every table cell and every name goes through :func:`sweeper.escape.md_text` (one
line, no control character, ``| [ ] <`` escaped), so a label cannot break a table, link
somewhere or carry HTML."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from sweeper.bounds import L2_SERVES, MARGIN, Bounds
from sweeper.ceilings import DOT_CEILING
from sweeper.consensus import AGREE
from sweeper.core._model import merged
from sweeper.core._units import counted
from sweeper.escape import md_text
from sweeper.kernels import Headline
from sweeper.outcome import problem_text
from sweeper.report import _shared
from sweeper.report._contents import ReportTables
from sweeper.report._tables import (
    PROBLEM_ORDER,
    agreement_frame,
    nothing_measured,
    problem_key,
    shrunk_frame,
)


def markdown(tables: ReportTables, images: list[Path]) -> str:
    """The report; ``images``: the heatmap files drawn (PNG and SVG)."""
    meta = tables.meta
    out = [f"# Study `{_text(meta.study)}`: {_text(meta.kernel)} on "
           f"{_text(meta.environment.get('gpu', '?'))}\n"]
    out += [f"> **{label}:** {_text(text)}.\n" for label, text in _shared.notes(tables)]
    if tables.unmeasured:
        out.append(f"**{_text(_sentence(tables.unmeasured))}**\n")
    out.append(_text(_shared.counts_sentence(tables)) + "\n")
    out += ["## What varied, and what was held fixed\n", md_table(_shared.factors_table(tables))]
    for section in (_shrunk, _picks, _winners, _effects, _best, _baselines, _ceilings, _bounds,
                    _power, _stops):
        out += section(tables)
    out += ["\n## Trials without a number\n", md_table(tables.failures, empty=_shared.NO_FAILURES)]
    if tables.abandoned_trials:
        out.append(f"\nEarly abandonment (`measure.abandon: {meta.measure['abandon']}`): "
                   f"{tables.abandoned_trials} trial(s) stopped sampling once clearly "
                   f"slower than the best, saving about "
                   f"{tables.abandoned_saved_ms:.4g} ms of GPU sampling time.\n")
    out += [*_heatmaps(tables, images), *_footprint(tables), *_roofline(tables)]
    out += ["\n## Measurement record\n",
            md_table(pd.DataFrame(tables.record, columns=["item", "record"])),
            "\n## Environment\n", md_table(_shared.environment_table(tables))]
    return "\n".join(out)


def md_table(df: pd.DataFrame, rename: dict[str, str] | None = None, *,
             empty: str | None = None) -> str:
    """``df`` as a Markdown table (:func:`._shared.shown_table`: ``rename`` after
    :data:`._shared.SHOWN`); ``empty`` (a sentence) where it has no row, else nothing."""
    if df.empty:
        return f"{empty}\n" if empty else ""
    names, rows = _shared.shown_table(df, rename)
    lines = ["| " + " | ".join(map(md_text, row)) + " |" for row in [names, *rows]]
    return "\n".join([lines[0], "|" + "---|" * len(names), *lines[1:]]) + "\n"


def _text(value: Any) -> str:
    """A value from the study in a sentence of the report: as :func:`md_text` shows it."""
    return md_text(str(value))


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:] + ("" if text.endswith(".") else ".")


def _shrunk(tables: ReportTables) -> list[str]:
    shrunk = shrunk_frame(tables.frame)
    if shrunk.empty:
        return []
    merging = " Problems that shrink to one are measured once: the others' configs are " \
             "skipped, with the problem they merged into as their reason (below)." \
        if tables.frame["reason"].map(merged).any() else ""
    return ["\n## Problems measured smaller than asked\n",
            "The device caps a problem's footprint: dimensions shrink by one factor, each "
            "keeping whether it is a power of two." + merging + "\n",
            md_table(shrunk, {"asked": "asked for"})]


def _picks(tables: ReportTables) -> list[str]:
    out = ["## Best config per problem\n", _shared.picks_intro("`sweeper export`") + "\n",
           md_table(*_shared.picks_table(tables), empty=_shared.no_picks(tables))]
    out += [_shared.unfinished(f"**{_text(p)}**") + "\n" for p in tables.unfinished]
    df = tables.frame
    if not tables.unmeasured and not df.empty:
        for _, sub in df.groupby(PROBLEM_ORDER, sort=True, dropna=False):
            why = nothing_measured(sub)
            if why:
                out.append(f"**{_text(problem_key(sub.iloc[0]))}**: {_text(why)}.\n")
    return out


def _best(tables: ReportTables) -> list[str]:
    if tables.best.empty:
        return []
    return ["## Best configs in the sweep\n", _shared.best_intro(tables) + "\n",
            md_table(*_shared.best_table(tables))]


def _baselines(tables: ReportTables) -> list[str]:
    if not tables.baselines:
        return []
    return [f"\n## {_shared.BASELINES}\n", md_table(_shared.baselines_table(tables))]


def _power(tables: ReportTables) -> list[str]:
    """Power, clocks and throttling (:func:`._tables.power_summary`); nothing where no trial
    had clocks to read (the interpreter, a replay)."""
    summary = tables.power
    if not summary["trials_with_clocks"]:
        return []
    mhz, capped, schedule = summary["sm_mhz"], summary["trials_capped"], summary["schedule"]
    out = ["\n## Power, clocks and throttling\n",
           f"SM clock while sampling (mean per trial, over {summary['trials_with_clocks']} "
           f"trials): {mhz['min']:.0f}-{mhz['max']:.0f} MHz, median {mhz['median']:.0f}"
           + (f"; highest board power {summary['power_w_max']:.0f} W"
              if summary["power_w_max"] is not None else "") + ".\n",
           f"The power cap (`sw_power_cap`) showed in {capped} trial(s), in "
           f"{100 * summary['capped_share']:.0f}% of their NVML polls on average; it labels "
           "samples and does not discard them, except under a cool-down schedule.\n" if capped
           else "The power cap (`sw_power_cap`) never showed while sampling.\n"]
    if summary["switched"]:
        out.append(f"Equal duty: {_text(summary['switched'])}.\n")
    elif schedule not in ("auto", "off"):
        out.append(f"Equal duty: measure.duty {_text(schedule)} for every config.\n")
    if summary["finals_duty"]:
        out.append("The finals ran under the same schedule "
                   f"({_text('; '.join(summary['finals_duty']))}).\n")
    if summary["samples_discarded"]:
        reasons = ", ".join(f"{k} ({v} chunk(s))" for k, v in summary["discard_reasons"].items())
        out.append(f"Samples discarded while throttled: {summary['samples_discarded']} "
                   f"({_text(reasons)}).\n")
    return out


def _stops(tables: ReportTables) -> list[str]:
    if tables.stops.empty:            # nothing was measured: the top says why
        return []
    return ["\n## How sampling stopped, and flags\n", md_table(tables.stops),
            "\n" + md_table(tables.flags, empty="No trial was flagged.")]


def _heatmaps(tables: ReportTables, images: list[Path]) -> list[str]:
    blank = [m.name for m in tables.heatmaps if not m.measured]
    single = [m.name for m in tables.heatmaps if m.measured and not m.drawn and not m.flat]
    flat = [m.name for m in tables.heatmaps if m.measured and m.flat]
    drawn = [f"![{p.stem}](heatmaps/{p.name})\n" for p in images if p.suffix == ".png"]
    if not drawn and not blank and not single and not flat:
        return []
    out = ["\n## Heatmaps\n", *drawn]
    if blank and len(blank) == len(tables.heatmaps):
        out.append("None drawn: no config was measured.\n")
    elif blank:
        out.append(f"Not drawn, no config in them was measured: {_text(', '.join(blank))}.\n")
    if single:
        out.append(f"Not drawn, a number in one cell only: {_text(', '.join(single))}; the "
                   "best-config tables above rank their configs.\n")
    if flat:
        out.append(f"Not drawn, fewer than two of grid, block and the meta-parameters vary in "
                   f"their problem: {_text(', '.join(flat))}; the best-config tables above "
                   "rank their configs.\n")
    folded = sum(m.folded for m in tables.heatmaps)
    if folded:
        out.append(f"{counted(folded, 'map')} of one meta values' configs held a number in "
                   f"one cell only: {'it is' if folded == 1 else 'each is'} folded into its "
                   "problem's best-over-meta map, whose cells name the meta values that won "
                   "them.\n")
    return out


def _footprint(tables: ReportTables) -> list[str]:
    if not tables.footprint:
        return []
    out = ["\n## Footprint curves\n"]
    for curve in tables.footprint:
        out.append(f"**{curve.dtype}**: {curve.caption}.\n")
        out.append(f"![{curve.name}](heatmaps/{curve.name}.png)\n")
    return out


def _roofline(tables: ReportTables) -> list[str]:
    roof = tables.roofline
    if roof is None:
        return []
    above = bool(roof.points["above"].astype(bool).any())
    out = ["\n## Roofline\n",
           "Each problem's chosen config at its arithmetic intensity (FLOPs / bytes the kernel "
           "declares for one launch) and FLOP/s (at the median it was chosen on), against "
           "the roofs: " + "; ".join(_text(f"{r.name} ({r.source})") for r in roof.roofs)
           + ". '% of roof' divides by the "
           "lower of the compute roof and intensity × the memory roof, each calibrated where "
           "measured, else the physical bound; '% of physical' by the bounds alone"
           + ("; 'above 100%' says why a share passes 100" if above else "") + ".\n"]
    if len(roof.points):
        shown = ["problem", "number", "intensity", "tflops", "roof", "pct_roof", "pct_physical",
                 *(["above"] if above else [])]
        rows = roof.points.assign(tflops=roof.points["flop_s"] / 1e12)[shown]
        out.append(md_table(rows, {"intensity": "FLOP/B", "tflops": "TFLOP/s",
                                   "roof": "limited by", "pct_roof": "% of roof",
                                   "pct_physical": "% of physical",
                                   "above": "above 100%"}))
    out += [f"- {_text(line)}\n" for line in roof.beside]
    out.append("\n![roofline](heatmaps/roofline.png)\n")
    return out


def _effects(tables: ReportTables) -> list[str]:
    if not tables.effects:
        return []
    at = ", ".join(e.baseline if e.members else f"{e.axis}={e.baseline}"
                   for e in tables.effects)
    out = ["## One variable at a time\n",
           f"Every axis swept alone, all others at the baseline ({_text(at)}).\n"]
    rows = pd.DataFrame([{"axis": f"{e.axis} ({', '.join(e.members)})" if e.members else e.axis,
                          "best value": "–" if e.unvaried else e.best, "baseline": e.baseline,
                          "best/worst": "–" if e.unvaried else f"{e.ratio:.4g}",
                          "effect beyond noise": f"not varied: {e.unvaried}" if e.unvaried
                          else e.beyond_noise}
                         for e in tables.effects])
    out.append(md_table(rows))
    for drift in tables.drift:
        out.append(f"\nThe baseline (#{drift.number}) measured again at the end: "
                   f"{drift.stats.median:.4g} ms, {drift.drift_pct:+.2f}% against "
                   "its first measurement.\n")
    out += [f"\n![{e.axis}](heatmaps/oat_{e.axis}.png)\n" for e in tables.effects
            if not e.unvaried]
    return out


def _winners(tables: ReportTables) -> list[str]:
    if not tables.finals:
        return []
    rules = list(dict.fromkeys(final.rule for final, _ in tables.finals))
    out = ["## Winners, re-measured interleaved\n",
           "Finalists (the top configs and every config tied with the best) were re-measured "
           "in round-robin rounds in one process; the winner comes from those samples. "
           + (f"Rule: {_text(rules[0])}.\n" if len(rules) == 1 else
              "Rules (each final records the one that chose it): "
              + " \\| ".join(map(_text, rules)) + ".\n")]
    for final, table in tables.finals:
        p = final.problem
        on = f" on {_text(final.gpu)}" if final.gpu is not None else ""
        out.append(f"**{problem_text(p)}**: winner{on} {_shared.final_text(final)}"
                   f"{', after ' + _text(final.duty) if final.duty else ''}."
                   f"{_shared.final_against(final, _text)}\n")
        out.append(md_table(table, rename=_shared.finals_names(tables)))
        if p in tables.agreements:            # the same finalists on several GPUs
            agree = tables.agreements[p]
            gpus = ", ".join(str(g) for g in agree.gpus)
            out += ["\n" + _text(f"Across GPUs ({gpus}; the same finalists in the same rounds "
                                 f"on each): {agree.headline()}. A config within {AGREE:.0%} "
                                 "of a GPU's fastest median counts as its best.") + "\n",
                    md_table(agreement_frame(agree))]
    return out


def _bounds(tables: ReportTables) -> list[str]:
    data, df = tables.meta.bounds, tables.frame
    out = ["\n## Physical bounds\n"]
    if data is None:
        return [*out, "Not recorded with this study: its results were not checked against "
                      "the device's physical limits.\n"]
    bounds = Bounds.from_json(data)
    if not bounds.all():
        return [*out, f"None on this device ({_text('; '.join(bounds.absent))}): results were not "
                      "checked against physical limits.\n"]
    failed = int((df["status"] == "impossible").sum()) if not df.empty else 0
    margin = data.get("margin", MARGIN)
    out.append(f"The device's theoretical peaks, in force with or without calibrated ceilings: "
               f"a trial more than {margin:.0%} faster than they allow is re-verified and "
               "re-timed once and, if still beyond, fails as `impossible` (it never wins and "
               "is never exported). The fewest seconds a launch can take is the largest of "
               f"(bytes moved − what the L2 can serve, at most {L2_SERVES}× its size) / DRAM, "
               f"bytes moved / SM load/store, and FLOPs / the dtype's rate. {failed} trial(s) "
               "failed so.\n")
    out.append("".join(f"- **{_text(b.name)}**: {_text(b.rate_text())}, from {_text(b.how)}\n"
                       for b in bounds.all()))
    if bounds.absent:
        out.append("Not available: " + _text("; ".join(bounds.absent)) + ".\n")
    return out


def _ceilings(tables: ReportTables) -> list[str]:
    ceilings = tables.ceilings
    if ceilings is None:
        return ["\n## Ceilings\n", tables.story.ceilings + "\n"]
    if tables.headline is Headline.TFLOPS:
        held = ", ".join(f"{d} against {c}" for d, c in DOT_CEILING.items())
        pct = ("'% of ceiling' divides TFLOP/s by the torch.matmul rate measured for the "
               f"trial's dtype ({held}: Triton's tl.dot runs those operands that way by "
               "default), a measurement, not a physical limit: a kernel faster than torch's "
               "reads above 100; ")
    else:
        pct = ("'% of ceiling' divides by the copy bandwidth measured at the trial's own "
               "footprint and cache mode, a measurement, not a physical limit: a kernel "
               "faster than torch's copy_ reads above 100; ")
    return ["\n## Ceilings\n",
            f"Measured by `sweeper calibrate` on {_text(ceilings.measured)}: DRAM copy "
            f"{ceilings.dram_bandwidth():.0f} GB/s (torch copy_, cold, largest footprint), "
            "matmul " + ", ".join(f"{k} {v:.0f} TFLOP/s" for k, v in ceilings.matmul.items()) +
            f", launch floor {ceilings.launch_floor_us:.1f} us. {pct}"
            "roofline: attainable = min(matmul peak, intensity × DRAM bandwidth).\n"]
