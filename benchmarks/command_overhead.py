"""The whole ``sweeper run`` command against a bare-loop script, both timed from the shell.

Run on a GPU machine:  python benchmarks/command_overhead.py [spaces/copy.yaml] --out DIR
Here, on the CPU:      python benchmarks/command_overhead.py SPACE --device interpret --out DIR

Each run is a fresh ``python`` process timed by the wall clock around it, imports and
all: a bare-loop script (written to DIR: for each config of the space, compile, warm up,
then time ``repeat`` samples with :func:`sweeper.measure.time_cuda`, the L2 flushed and the
GPU held before each as the sweep's CUDA device does, and print the best), ``python -m
sweeper run SPACE`` (report included) and the same with ``--no-report``, each in an empty
studies folder.  ``warm``: the Triton cache is a dedicated folder that one untimed
``sweeper run`` filled first; ``cold``: a fresh empty cache folder for every run.  Where
``kernel_tuner`` imports, Kernel Tuner tunes the CUDA C copy of ``--cuda-space`` over the
same values from a cold cache.  The table gives every run's wall seconds and the ratios
against the goals of issue 13; DIR keeps the scripts, each run's stdout and stderr, and
``results.json``.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import os
import pickle
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import yaml

from sweeper.devices import open_device
from sweeper.space import Config, MeasureSpec, Space, load_space
from sweeper.study import resolved

ROOT = Path(__file__).resolve().parent.parent
RUNS = ("bare", "run", "run-no-report", "run-poll-once", "kernel-tuner")
#: Each run's environment beyond the Triton cache: ``run-poll-once`` is ``run`` with the
#: workers' NVML state read once, not polled (what the poller costs the command).
RUN_ENV = {"run-poll-once": {"SWEEPER_NVML_PERIOD_MS": "1e9"}}
WARM_GOAL = 1.15            # sweeper run / bare loop, warm Triton cache
KERNEL_TUNER_GOAL = 0.5     # sweeper run / Kernel Tuner, cold caches
KERNEL_TUNER_WHEEL = ("kernel_tuner is not installed: Kernel Tuner not timed. To carry it "
                      "to a machine without an index: `pip wheel kernel_tuner -w wheels/` "
                      "where pip can reach one, copy wheels/ over, then `pip install "
                      "--no-index --find-links wheels/ kernel_tuner`")

BARE_LOOP = '''\
"""A bare loop over {count} configs: compile, warm up, time; no store, no checks."""
import os, pickle, statistics, sys, time
from sweeper.engine._clock import process_age
BORN = time.perf_counter() - (process_age() or 0.0)
if {interpret!r}:
    os.environ["TRITON_INTERPRET"] = "1"
import torch
from sweeper.kernels import load_kernel
from sweeper.measure import StopRule, median_ci, sample_until, time_cuda, time_host
from sweeper.trial import abandon_rule

configs = pickle.loads({blob!r})
kernel = load_kernel({kernel!r}, {options!r})
device = "cpu" if {interpret!r} else "cuda"
buffers = {{}}
flush_buffer = None if {interpret!r} else torch.empty({flush_bytes}, dtype=torch.uint8,
                                                      device="cuda")
rule = StopRule(**{rule!r})           # the space's stopping rule, as the sweep applies it
best = None
abandon, abandoned, taken = {abandon!r}, 0, 0
started = time.perf_counter()
for cfg in configs:
    if cfg.problem not in buffers:
        buffers[cfg.problem] = kernel.allocate(cfg.problem, device)
        kernel.randomize(buffers[cfg.problem], torch.Generator(device=device).manual_seed(0))
    b = buffers[cfg.problem]
    kernel.launch(b, cfg)                       # compile (or load from the cache)

    def take(repeat, warmup=0):
        if {interpret!r}:
            return time_host(lambda: kernel.launch(b, cfg), warmup=warmup, repeat=repeat)
        return time_cuda(lambda: kernel.launch(b, cfg), warmup=warmup, repeat=repeat,
                         flush=flush_buffer.zero_ if cfg.cache == "cold" else None,
                         hold=lambda: torch.cuda._sleep({hold}))
    # the sweep's warmup: turns of the timing loop, only two where those two took
    # warmup_time (sweeper.core.warmup_turns)
    warm = take(2) if {warmup} > 2 and {warmup_time!r} is not None else []
    if not warm or sum(warm) < {warmup_time!r} * 1e3:
        take(0, {warmup} - len(warm))
    # the sweep's sampling: the stopping rule, and early abandonment by the same rule
    timing = sample_until(take, rule, abandon=abandon_rule(best[1], abandon)
                          if abandon and best is not None else None)
    taken += len(timing.samples)
    if timing.abandoned:
        abandoned += 1
        continue
    median = statistics.median(timing.samples)
    if best is None or median < best[0]:
        best = (median, median_ci(timing.samples)[1], cfg)
print(f"bare loop: {{len(configs)}} configs ({{abandoned}} abandoned, {{taken}} samples), "
      f"best median {{best[0]:.4f}} ms: {{best[2]}}")
print(f"time: before the loop {{started - BORN:.2f}} s (python start, imports, set-up), "
      f"loop {{time.perf_counter() - started:.2f}} s")
'''

KERNEL_TUNER = '''\
"""Kernel Tuner tunes the CUDA C copy over {count} configs of the sweeper space."""
import importlib.util
import numpy as np
from kernel_tuner import tune_kernel

grids = {grids!r}           # "block,VEC,UNROLL,grid index" -> blocks launched
n = {n}
src = np.random.default_rng(0).random(n, dtype=np.float32)
params = {params!r}
params["GRID_I"] = list(range({grid_count}))

names = [*{meta!r}, "block_size_x", "GRID_I"]

def key(p):
    return ",".join(str(p[k]) for k in names)

# only configs the space has (Kernel Tuner 1.5 passes a restriction's values positionally)
total = 1
for values in params.values():
    total *= len(values)
restrictions = None if total == len(grids) else [
    (lambda *v: key(dict(zip(names, v))) in grids, names)]
results, env = tune_kernel(
    {entry!r}, {source!r}, lambda p: grids[key(p)], [np.zeros_like(src), src, np.int64(n)],
    params, grid_div_x=[], restrictions=restrictions,
    compiler_options=["-DDTYPE=float"], iterations={repeat},
    lang="cupy" if importlib.util.find_spec("cupy") else None, quiet=True)
best = min(results, key=lambda r: r["time"])
print(f"kernel tuner: {{len(results)}} configs, best {{best['time']:.4f}} ms: {{best}}")
'''


@dataclass(frozen=True)
class Timed:
    """One timed process: its name, Triton cache, wall seconds and exit status, and the
    samples it took (a sweeper run's from its study, the bare loop's from its output;
    None: not told)."""

    name: str
    cache: str
    wall_s: float
    rc: int
    samples: int | None = None
    round: int = 1

    @property
    def tag(self) -> str:
        """Its outputs' name in DIR (:func:`tag_of`)."""
        return tag_of(self.name, self.cache, self.round)


def tag_of(name: str, cache: str, round_: int) -> str:
    """A run's outputs' name in DIR: NAME-CACHE, NAME-CACHE-ROUND past the first round."""
    return f"{name}-{cache}" + (f"-{round_}" if round_ > 1 else "")


def space_configs(space_path: str, device_spec: str
                  ) -> tuple[Space, MeasureSpec, int, list[tuple[dict[str, str], Config]]]:
    """The space, its measurement as the device caps it, the L2 bytes to flush, and
    every valid (choice, config) on the device."""
    space = load_space(space_path)
    device = open_device(device_spec, for_plan=device_spec == "cuda")
    facts = device.facts()
    pairs = [(dict(choice), cfg) for choice, cfg in resolved(space, facts.env(),
                                                             facts.max_footprint)
             if isinstance(cfg, Config)]
    return space, device.measure_spec(space.measure), facts.l2_bytes, pairs


def write_bare_loop(out: Path, space_path: str, device_spec: str) -> Path:
    """The bare-loop script for the space, written to ``out``."""
    from sweeper.devices._cuda import HOLD_CYCLES

    space, measure, l2_bytes, pairs = space_configs(space_path, device_spec)
    configs = [cfg for _, cfg in pairs]
    script = out / "bare_loop.py"
    script.write_text(BARE_LOOP.format(
        count=len(configs), interpret=device_spec == "interpret", blob=pickle.dumps(configs),
        kernel=space.kernel, options=space.kernel_options, flush_bytes=2 * l2_bytes,
        warmup=measure.warmup, warmup_time=measure.warmup_time_s, hold=HOLD_CYCLES,
        abandon=measure.abandon,
        rule=dataclasses.asdict(measure.rule())))
    return script


def write_kernel_tuner(out: Path, space_path: str, device_spec: str = "cuda"
                       ) -> tuple[Path, int]:
    """Kernel Tuner's script over the CUDA space's values (its grid labels by index, each
    config's blocks looked up), and how many configs it tunes."""
    space, measure, _, pairs = space_configs(space_path, device_spec)
    options = dict(space.kernel_options)
    grid_labels = list(space.choices()["grid"])
    meta = tuple(sorted(pairs[0][1].meta))
    grids = {",".join(str(v) for v in (*(cfg.meta[m] for m in meta), cfg.block,
                                       grid_labels.index(choice["grid"]))): cfg.grid
             for choice, cfg in pairs}
    params: dict[str, list[int]] = {m: sorted({c.meta[m] for _, c in pairs}) for m in meta}
    params["block_size_x"] = sorted({c.block for _, c in pairs})
    script = out / "kernel_tuner_copy.py"
    script.write_text(KERNEL_TUNER.format(
        count=len(pairs), grids=grids, n=pairs[0][1].problem.n, params=params,
        grid_count=len(grid_labels), meta=meta, entry=options.get("entry", "copy"),
        source=options["source"], repeat=measure.repeat))
    return script, len(pairs)


def timed(name: str, cache: str, command: list[str], out: Path, triton_cache: Path,
          round_: int = 1) -> Timed:
    """Run ``command`` from the repository root with ``triton_cache`` as Triton's (and
    CuPy's) cache, its wall seconds by the clock around the process; stdout and stderr
    kept in ``out`` under its :func:`tag_of` (.stdout / .stderr)."""
    tag = tag_of(name, cache, round_)
    env = {**os.environ, "TRITON_CACHE_DIR": str(triton_cache),
           "CUPY_CACHE_DIR": str(triton_cache / "cupy"), **RUN_ENV.get(name, {})}
    t0 = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True,
                          check=False)
    wall = time.perf_counter() - t0
    (out / f"{tag}.stdout").write_text(done.stdout)
    (out / f"{tag}.stderr").write_text(done.stderr)
    if done.returncode:
        tail = done.stderr.strip().splitlines()[-1:] or ["(no stderr)"]
        print(f"{name} ({cache} cache) failed with exit status {done.returncode}: {tail[0]}",
              file=sys.stderr)
    return Timed(name, cache, wall, done.returncode, round=round_)


def sweeper_command(space: str, device: str, studies: Path, report: bool) -> list[str]:
    """``python -m sweeper run SPACE --timing`` in an empty studies folder (its stdout
    keeps where the time went: the ``time:`` line and the sweep's breakdown)."""
    return [sys.executable, "-m", "sweeper", "run", space, "--studies-dir", str(studies),
            "--device", device, "--timing", *([] if report else ["--no-report"])]


def samples_taken(studies: Path, stdout: Path) -> int | None:
    """The samples a run took: the bare loop's from its output (``stdout``), a sweeper
    run's from its study under ``studies`` (its trials'), so runs under an adaptive
    stopping rule are compared with what each measured; None where neither tells."""
    said = re.search(r"^bare loop: \d+ configs \(\d+ abandoned, (\d+) samples\)",
                     stdout.read_text() if stdout.exists() else "", re.MULTILINE)
    if said:
        return int(said.group(1))
    from sweeper.store import StudyStore

    folders = [p for p in studies.iterdir() if p.is_dir()] if studies.is_dir() else []
    if len(folders) != 1:
        return None
    return sum(t.stats.n for t in StudyStore(folders[0]).records()[0]
               if t.ok and t.stats is not None)


def ratio_line(what: str, top: Timed | None, bottom: Timed | None, goal: float) -> str:
    """``what: 1.100x (goal <= 1.15x: met)``, or why there is no ratio."""
    if top is None or bottom is None:
        return f"{what}: not measured"
    if top.rc or bottom.rc:
        return f"{what}: a run failed (see its .stderr)"
    ratio = top.wall_s / bottom.wall_s
    return (f"{what}: {ratio:.3f}x (goal <= {goal}x: "
            f"{'met' if ratio <= goal else 'not met'})")


def table(rows: list[Timed]) -> list[str]:
    """The runs' wall seconds, each over the bare loop with the same cache and round, and
    the goals: the median wall of each run over its rounds against the bare loop's."""
    by = {(r.name, r.cache, r.round): r for r in rows}
    rounds = max((r.round for r in rows), default=1)
    lines = ["| run | Triton cache | wall s | over the bare loop | samples |",
             "|---|---|---|---|---|"]
    for r in rows:
        bare = by.get(("bare", r.cache, r.round))
        over = (f"{r.wall_s / bare.wall_s:.3f}x" if bare and not (bare.rc or r.rc)
                and r.name != "kernel-tuner" else "")
        wall = f"{r.wall_s:.2f}" if not r.rc else f"{r.wall_s:.2f} (exit {r.rc})"
        samples = "" if r.samples is None else str(r.samples)
        name = r.name if rounds == 1 else f"{r.name} ({r.round})"
        lines.append(f"| {name} | {r.cache} | {wall} | {over} | {samples} |")
    lines.append(ratio_line("sweeper run / bare loop, warm cache", median_of(rows, "run", "warm"),
                            median_of(rows, "bare", "warm"), WARM_GOAL))
    if any(r.name == "run-poll-once" for r in rows):
        lines.append(ratio_line("sweeper run, NVML read once / bare loop, warm cache",
                                median_of(rows, "run-poll-once", "warm"),
                                median_of(rows, "bare", "warm"), WARM_GOAL))
    lines.append(ratio_line("sweeper run / Kernel Tuner, cold caches",
                            median_of(rows, "run", "cold"),
                            median_of(rows, "kernel-tuner", "cold"), KERNEL_TUNER_GOAL))
    if rounds > 1:
        lines.append(f"(ratios of the median wall over {rounds} rounds)")
    return lines


def median_of(rows: list[Timed], name: str, cache: str) -> Timed | None:
    """The run ``name`` with ``cache`` as one row: its median wall over its rounds (a failed
    round fails it); None where it did not run."""
    import statistics

    mine = [r for r in rows if (r.name, r.cache) == (name, cache)]
    if not mine:
        return None
    return Timed(name, cache, statistics.median(r.wall_s for r in mine),
                 max(r.rc for r in mine))


def changed_space(space: Path, changes: list[str], out: Path) -> Path:
    """``space`` with its ``measure:`` settings changed (``KEY=VALUE``, VALUE as YAML),
    written to ``out`` under the same name."""
    data = yaml.safe_load(space.read_text())
    for change in changes:
        key, _, value = change.partition("=")
        data.setdefault("measure", {})[key] = yaml.safe_load(value)
    path = out / space.name
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    print(f"{space.name} with measure: {data['measure']}")
    return path


def run_all(args: argparse.Namespace, out: Path, tmp: Path) -> list[Timed]:
    """Every requested run, warm cache first; the warm cache filled by one untimed run."""
    bare = write_bare_loop(out, args.space, args.device)
    commands = {"bare": [sys.executable, str(bare)]}
    rows: list[Timed] = []
    for cache in (c for c in ("warm", "cold") if args.cache in (c, "both")):
        warm_dir = tmp / "triton-warm"
        if cache == "warm":
            subprocess.run(sweeper_command(args.space, args.device, tmp / "studies-warm-up",
                                           True), cwd=ROOT, check=False, capture_output=True,
                           env={**os.environ, "TRITON_CACHE_DIR": str(warm_dir)})
        for round_, name in itertools.product(range(1, args.rounds + 1),
                                              [r for r in args.runs if r != "kernel-tuner"]):
            studies = tmp / f"studies-{name}-{cache}-{round_}"
            command = commands.get(name) or sweeper_command(args.space, args.device, studies,
                                                            name != "run-no-report")
            triton = warm_dir if cache == "warm" else tmp / f"triton-{name}-{cache}-{round_}"
            row = timed(name, cache, command, out, triton, round_)
            rows.append(dataclasses.replace(row, samples=samples_taken(
                studies, out / f"{row.tag}.stdout")))
    if args.cache == "warm" or "kernel-tuner" not in args.runs:
        return rows
    if args.device != "cuda":
        print("Kernel Tuner not timed: it needs a CUDA GPU")
        return rows
    try:
        import kernel_tuner  # type: ignore[import-not-found]  # noqa: F401
    except ImportError:
        print(KERNEL_TUNER_WHEEL)
        return rows
    script, count = write_kernel_tuner(out, args.cuda_space)
    print(f"Kernel Tuner: {count} configs of {args.cuda_space}")
    rows.append(timed("kernel-tuner", "cold", [sys.executable, str(script)], out,
                      tmp / "triton-kernel-tuner"))
    return rows


def main(argv: list[str] | None = None) -> int:
    """Time the runs, print the table, keep the raw outputs; 1 if a run failed."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("space", nargs="?", default="spaces/copy.yaml")
    p.add_argument("--device", default="cuda", choices=("cuda", "interpret"))
    p.add_argument("--out", required=True, type=Path, help="where raw outputs go")
    p.add_argument("--cache", default="both", choices=("warm", "cold", "both"))
    p.add_argument("--runs", default=",".join(RUNS), type=lambda s: s.split(","),
                   help=f"which of {', '.join(RUNS)} (comma-separated; default all)")
    p.add_argument("--rounds", type=int, default=1,
                   help="time each run this many times, interleaved (bare, run, ..., bare, "
                        "run, ...); the ratios are of the medians (Kernel Tuner: once)")
    p.add_argument("--cuda-space", default="spaces/cuda-copy.yaml",
                   help="the CUDA C space Kernel Tuner tunes")
    p.add_argument("--measure", action="append", default=[], metavar="KEY=VALUE",
                   help="change one of the space's measure settings for every run, e.g. "
                        "--measure abandon=1.5 (the bare loop abandons by the same rule); "
                        "the changed space is written to --out")
    args = p.parse_args(argv)
    if bad := [m for m in args.measure if not m.partition("=")[0] or "=" not in m]:
        p.error(f"--measure {bad[0]!r}: expected KEY=VALUE, e.g. abandon=1.5")
    if args.rounds < 1:
        p.error(f"--rounds {args.rounds}: at least 1")
    if unknown := [r for r in args.runs if r not in RUNS]:
        p.error(f"--runs: {', '.join(unknown)} unknown; known: {', '.join(RUNS)}")
    args.space = str(Path(args.space).resolve())
    args.cuda_space = str(Path(args.cuda_space).resolve())
    args.out.mkdir(parents=True, exist_ok=True)
    if args.measure:
        args.space = str(changed_space(Path(args.space), args.measure, args.out))
    with tempfile.TemporaryDirectory() as tmp:
        rows = run_all(args, args.out, Path(tmp))
    lines = table(rows)
    print("\n".join(lines))
    (args.out / "results.json").write_text(json.dumps(
        {"space": args.space, "device": args.device, "runs": [asdict(r) for r in rows],
         "table": lines}, indent=1))
    return 1 if any(r.rc for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
