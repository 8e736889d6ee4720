"""Dispatch by shape: what each rule costs on shapes that were not tuned, against tuning
each of them exhaustively.

    python benchmarks/dispatch_regret.py                       # the recorded H200 tables
    python benchmarks/dispatch_regret.py --tuned T.csv [...] --held-out H.csv [...]

Each argument is a replay table (``sweeper export STUDY --format csv``), one or many
problems in it.  A tuned problem keeps its top configs with their slowdowns, as a tuning
file does (``sweeper.dispatch.TOP_K``); each rule turns them into the configs a held-out
problem runs, looked up among its own measurements: regret = the best of them / the
problem's best - 1.  The chosen rule is ``sweeper.dispatch``'s, the one ``sweeper.tuned``,
``sweeper.tuned_kernel`` and the exported module use: measure the candidates (the nearest
winner, then the bracketing tuned shapes' tops) at the first call, as ``@triton.autotune``
does; ``nearest winner`` is its pick, run without measuring.  Printed: the chosen rule per
held-out problem, then every rule's geomean and worst regret per set (goals: geomean
<= 2 %, worst <= 5 %).

Default (no arguments): the recorded H200 tables: bf16 square matmuls tuned at 1024, 1536,
2048, 3072 and 4096, held out 1152, 1280, 1792, 2304, 2560 and 3584; fp16 likewise; and
leave-one-out over each matmul, copy and add family.  The measurement on a GPU over
non-square shapes (9 tuned, 5 held out, 32 configs each; about 4 minutes on an H200, most
of it compiling, since the matmul's M, N and K are constexprs):

    sweeper run benchmarks/spaces/dispatch-tuned.yaml --quiet --studies-dir /tmp/d
    sweeper run benchmarks/spaces/dispatch-heldout.yaml --quiet --studies-dir /tmp/d
    sweeper export dispatch-tuned --studies-dir /tmp/d --format csv -o /tmp/d/tuned.csv
    sweeper export dispatch-heldout --studies-dir /tmp/d --format csv -o /tmp/d/heldout.csv
    python benchmarks/dispatch_regret.py --tuned /tmp/d/tuned.csv --held-out /tmp/d/heldout.csv
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple, cast

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sweeper.devices._replay import read_table
from sweeper.dispatch import TOP_K, bracketing, candidates, nearest_index
from sweeper.kernels._catalog import describe
from sweeper.space import parse_size

REPLAY = Path(__file__).resolve().parent.parent / "tests" / "data" / "replay"
DEFAULT_TUNED = ["1k", "1536", "2k", "3k", ""]
DEFAULT_HELD_OUT = ["1152", "1280", "1792", "2304", "2560", "3584"]
_MM16 = [f"matmul-fp16-{s}" for s in ("1k", "1152", "1280", "1536", "1792", "2304", "2560",
                                       "3k")] + ["matmul-fp16"]
#: Table stems (h200-STEM.csv) of the fixed splits: tuned, held out.
FIXED = {
    "bf16 matmul": ([f"matmul-{s}" if s else "matmul" for s in DEFAULT_TUNED],
                    [f"matmul-{s}" for s in DEFAULT_HELD_OUT]),
    "fp16 matmul": ([_MM16[i] for i in (0, 3, 7, 8)], [_MM16[i] for i in (1, 2, 4, 5, 6)]),
}
#: Families of one kernel and dtype at three sizes or more, for leave-one-out.
FAMILIES = {
    "bf16 matmul": [*FIXED["bf16 matmul"][0], *FIXED["bf16 matmul"][1]],
    "fp16 matmul": _MM16,
    "fp32 copy": ["copy-8m", "copy-128m", "copy-256m", "copy", "copy-4g"],
    "fp16 copy": ["copy-fp16-32m", "copy-fp16-512m", "copy-fp16", "copy-fp16-2g"],
    "bf16 copy": ["copy-bf16-64m", "copy-bf16-512m", "copy-bf16-2g"],
    "fp32 add": ["add-64m", "add-128m", "add-256m", "add-512m", "add"],
    "bf16 add": ["add-bf16-16m", "add-bf16-256m", "add-bf16"],
}
GOAL_GEOMEAN, GOAL_WORST = 0.02, 0.05
#: Columns that say which problem a row measured (besides the kernel's dimensions).
PROBLEM_COLUMNS = ("dtype", "footprint", "cache")

Config = tuple[tuple[str, str], ...]


class Problem(NamedTuple):
    """One measured problem of a table: its size by name, and each config's median."""

    label: str
    size: dict[str, int]             # the dimensions, else {"footprint": bytes}
    medians: dict[Config, float]

    def best(self) -> tuple[Config, float]:
        """The fastest config and its median."""
        config = min(self.medians, key=lambda c: self.medians[c])
        return config, self.medians[config]


def problems(path: Path) -> list[Problem]:
    """The problems of a replay table, ok rows only."""
    header, columns, rows = read_table(path)
    dims = [d for d in describe(header.get("kernel", "")).dims if d in columns]
    keys = [c for c in columns if c in PROBLEM_COLUMNS or c in dims]
    config_columns = [c for c in columns if c not in keys and
                      c not in ("status", "median_ms", "samples_ms")]
    found: dict[tuple[str, ...], Problem] = {}
    for row in rows:
        if row["status"] != "ok":
            continue
        key = tuple(row[k] for k in keys)
        if key not in found:
            size = {d: int(row[d]) for d in dims} or \
                {"footprint": parse_size(row["footprint"])}
            label = " ".join(f"{k}={row[k]}" for k in keys if k != "cache")
            found[key] = Problem(label, size, {})
        found[key].medians[tuple((c, row[c]) for c in config_columns)] = \
            float(row["median_ms"])
    return list(found.values())


def top(problem: Problem, k: int = TOP_K) -> list[tuple[Config, float]]:
    """A tuned problem's top ``k`` configs and slowdowns, as a tuning file carries them."""
    _, best = problem.best()
    return [(c, m / best) for c, m in sorted(problem.medians.items(),
                                             key=lambda x: x[1])[:k]]


def _scored(tuned: Sequence[Problem], asked: Problem, score: Callable[
        [list[float], list[float]], Any], everywhere: bool = False) -> list[Config]:
    """The one config of least ``score(slowdowns, weights)`` over the bracketing tuned
    problems' tops (every tuned problem's when ``everywhere``); a config missing from a
    top counts at that top's last slowdown."""
    around = [(i, 1.0) for i in range(len(tuned))] if everywhere else \
        bracketing([t.size for t in tuned], asked.size)
    rows = [(dict(top(tuned[i])), w) for i, w in around]
    pool = sorted({c for row, _ in rows for c in row})
    return [min(pool, key=lambda c: score([row.get(c, max(row.values())) for row, _ in rows],
                                           [w for _, w in rows]))]


def _geomean(slow: list[float], weights: list[float]) -> float:
    return sum(math.log(s) for s in slow) / len(slow)


def _interpolated(slow: list[float], weights: list[float]) -> float:
    return sum(w * math.log(s) for s, w in zip(slow, weights, strict=True))


def _minimax(slow: list[float], weights: list[float]) -> tuple[float, float]:
    return max(slow), _geomean(slow, weights)


#: Each rule: tuned problems and the asked one -> the configs it runs (one: no measuring;
#: several: the asked shape's first call measures them, as ``@triton.autotune`` does).
RULES: dict[str, Callable[[Sequence[Problem], Problem], list[Config]]] = {
    "nearest winner (the pick)": lambda tuned, asked: [
        tuned[nearest_index([t.size for t in tuned], asked.size)].best()[0]],
    "bracket geomean": lambda tuned, asked: _scored(tuned, asked, _geomean),
    "interpolated log time": lambda tuned, asked: _scored(tuned, asked, _interpolated),
    "minimax among tops": lambda tuned, asked: _scored(tuned, asked, _minimax),
    "one config for all": lambda tuned, asked: _scored(tuned, asked, _minimax, True),
    "measure the candidates (chosen)": lambda tuned, asked: [
        cast(Config, c) for c in candidates([t.size for t in tuned],
                                            [top(t) for t in tuned], asked.size)],
}
CHOSEN = "measure the candidates (chosen)"


class Regret(NamedTuple):
    """One held-out problem under one rule: the configs the rule runs and the regret of
    the best of them (``None``: none was measured on the held-out problem)."""

    problem: Problem
    configs: list[Config]
    regret: float | None


def regrets(tuned: Sequence[Problem], held_out: Sequence[Problem],
            rule: str = CHOSEN) -> list[Regret]:
    """Each held-out problem's regret under ``rule``."""
    out = []
    for problem in held_out:
        configs = RULES[rule](tuned, problem)
        _, best = problem.best()
        mine = [problem.medians[c] for c in configs if c in problem.medians]
        out.append(Regret(problem, configs, min(mine) / best - 1 if mine else None))
    return out


def summary(rows: Sequence[Regret]) -> tuple[float, float] | None:
    """Geometric mean and worst regret of the measured rows."""
    measured = [r.regret for r in rows if r.regret is not None]
    if not measured:
        return None
    return math.exp(sum(math.log1p(x) for x in measured) / len(measured)) - 1, max(measured)


def table(rows: Sequence[Regret]) -> str:
    """The chosen rule's rows and the summary, as markdown."""
    lines = ["| held-out problem | configs run | first (the pick) | regret |",
             "|---|---|---|---|"]
    for r in rows:
        config = " ".join(f"{k}={v}" for k, v in r.configs[0])
        regret = "not measured there" if r.regret is None else f"{100 * r.regret:.2f} %"
        lines.append(f"| {r.problem.label} | {len(r.configs)} | {config} | {regret} |")
    got = summary(rows)
    if got is None:
        return "\n".join([*lines, "", "no dispatched config was measured on a held-out problem"])
    geomean, worst = got
    measured = sum(r.regret is not None for r in rows)
    lines += ["", f"{measured} of {len(rows)} held-out problems: geomean regret "
              f"{100 * geomean:.2f} % (goal <= {100 * GOAL_GEOMEAN:g} %: "
              f"{'met' if geomean <= GOAL_GEOMEAN else 'missed'}), worst {100 * worst:.2f} % "
              f"(goal <= {100 * GOAL_WORST:g} %: {'met' if worst <= GOAL_WORST else 'missed'})"]
    return "\n".join(lines)


Split = tuple[Sequence[Problem], Sequence[Problem]]       # (tuned, held out)


def rule_table(sets: Mapping[str, Sequence[Split]]) -> str:
    """Every rule's geomean / worst regret (configs run per problem, on average) per set
    of splits."""
    lines = ["| rule | " + " | ".join(sets) + " |", "|---" * (len(sets) + 1) + "|"]
    for rule in RULES:
        cells = []
        for splits in sets.values():
            rows = [r for tuned, held in splits for r in regrets(tuned, held, rule)]
            got = summary(rows)
            runs = sum(len(r.configs) for r in rows) / max(len(rows), 1)
            cells.append("-" if got is None else
                         f"{100 * got[0]:.2f} / {100 * got[1]:.2f} % ({runs:.3g})")
        lines.append(f"| {rule} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def leave_one_out(family: Sequence[Problem]) -> list[Split]:
    """Each problem strictly inside the family's range held out in turn, the rest tuned."""
    ordered = sorted(family, key=lambda p: sorted(p.size.items()))
    return [([q for q in ordered if q is not p], [p]) for p in ordered[1:-1]]


def recorded_sets() -> dict[str, list[Split]]:
    """The recorded H200 tables as sets of splits: the two fixed matmul splits, and
    leave-one-out over each family with three sizes or more."""
    def load(names: Sequence[str]) -> list[Problem]:
        return [p for n in names for p in problems(REPLAY / f"h200-{n}.csv")]

    sets: dict[str, list[Split]] = {}
    for label, (tuned, held) in FIXED.items():
        sets[f"{label} fixed"] = [(load(tuned), load(held))]
    for label, names in FAMILIES.items():
        sets[f"{label} loo"] = leave_one_out(load(names))
    return sets


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tuned", nargs="+", type=Path, help="replay tables of the tuned set")
    parser.add_argument("--held-out", nargs="+", type=Path,
                        help="replay tables of the held-out shapes, each tuned exhaustively")
    args = parser.parse_args(argv)
    if bool(args.tuned) != bool(args.held_out):
        parser.error("give both --tuned and --held-out, or neither")
    if args.tuned:
        tuned = [p for path in args.tuned for p in problems(path)]
        held_out = [p for path in args.held_out for p in problems(path)]
        sets: dict[str, list[Split]] = {"given tables": [(tuned, held_out)]}
    else:
        sets = recorded_sets()
        tuned, held_out = sets["bf16 matmul fixed"][0]  # type: ignore[assignment]
    if not tuned or not held_out:
        print("dispatch_regret: no measured problem in the "
              f"{'tuned' if not tuned else 'held-out'} tables", file=sys.stderr)
        return 2
    print(f"{CHOSEN}, per held-out problem of {next(iter(sets))}:\n")
    print(table(regrets(tuned, held_out)))
    print("\nevery rule: geomean / worst regret (configs run per problem)\n")
    print(rule_table(sets))
    return 0


if __name__ == "__main__":
    sys.exit(main())
