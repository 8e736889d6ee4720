"""A small replayed study with every kind of trial (ok, failed, ruled out, missing from
the table), shared by the API and export-format tests."""

from __future__ import annotations

import csv
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TABLE = ROOT / "tests" / "data" / "replay" / "h200-copy.csv"

#: 2 grids × 2 blocks × 2 BLOCKs = 8 configs: block=128 with BLOCK=512 is ruled out (2),
#: one config is not in the table (missing), one failed when it was recorded.
SPACE = """\
study: mixed
kernel: copy
sampler: exhaustive
params:
  grid: [sms, 2*sms]
  block: [64, 128]
  BLOCK: [512, 1024]
  dtype: [float32]
  footprint: [1GiB]
constraints: ["BLOCK >= 8*block"]
"""
FAILED = {"grid": "sms", "block": "64", "BLOCK": "1024"}
MISSING = {"grid": "2*sms", "block": "64", "BLOCK": "512"}


def mixed_table(folder: Path) -> Path:
    """A replay table of :data:`SPACE`'s configs from the H200 copy table, one of them
    recorded as a wrong answer and one left out."""
    lines = TABLE.read_text().splitlines()
    header = [line for line in lines if line.startswith("#")]
    rows = list(csv.DictReader(line for line in lines if not line.startswith("#")))
    kept = []
    for row in rows:
        if row["grid"] not in ("sms", "2*sms") or row["block"] not in ("64", "128") or \
                row["BLOCK"] not in ("512", "1024"):
            continue
        if all(row[k] == v for k, v in MISSING.items()):
            continue
        if all(row[k] == v for k, v in FAILED.items()):
            row.update(status="wrong_answer", median_ms="", samples_ms="")
        kept.append(row)
    path = folder / "mixed.csv"
    with path.open("w", newline="") as f:
        f.write("\n".join(header) + "\n")
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(kept)
    return path


def replayed_trials(folder: Path) -> list:
    """The trials of :data:`SPACE` swept in ``folder`` on :func:`mixed_table`, in order:
    two ruled out, a wrong answer, a missing config and four measured."""
    import sweeper
    from sweeper.store import StudyStore

    study = sweeper.run(SPACE, device=f"replay:{mixed_table(folder)}", studies_dir=folder,
                        quiet=True, report=False)
    return StudyStore(study.path).records()[0]


def forced_study(folder: Path, monkeypatch, trials: int = 2):
    """The study of :data:`SPACE` swept in ``folder`` on :func:`mixed_table`, then resumed
    with ``--force`` after its kernel's source changed (to ``"1" * 16``) on a table whose
    times are twice as long, measuring ``trials`` configs again: every trial on the
    earlier source is faster than its config's on the source now.  The :class:`Study`."""
    import sweeper
    from sweeper.kernels import load_kernel

    table = mixed_table(folder)
    sweeper.run(SPACE, device=f"replay:{table}", studies_dir=folder, quiet=True,
                report=False)
    lines = table.read_text().splitlines()
    rows = list(csv.DictReader(line for line in lines if not line.startswith("#")))
    for row in rows:
        if row["median_ms"]:
            row["median_ms"] = repr(2 * float(row["median_ms"]))
            row["samples_ms"] = " ".join(repr(2 * float(x)) for x in row["samples_ms"].split())
    slow = folder / "slow.csv"
    with slow.open("w", newline="") as f:
        f.write("\n".join(line for line in lines if line.startswith("#")) + "\n")
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    monkeypatch.setattr(type(load_kernel("copy")), "source_hash", lambda self: "1" * 16)
    return sweeper.run(SPACE, device=f"replay:{slow}", studies_dir=folder, quiet=True,
                       report=False, force=True, trials=trials)


#: The reason a trial whose worker process a SIGKILL from outside ended is recorded with.
KILLED = ("a SIGKILL that sweeper did not send killed the worker process: not the kernel's "
          "fault, the sweep measures it again")


def killed_from_outside(record):
    """``record`` (a :class:`~sweeper.store.TrialRecord`) as a worker process's trial
    that a SIGKILL sweeper did not send ended is kept (``retry``): crashed, no samples,
    its config to be measured again."""
    import dataclasses

    from sweeper.trial import TrialStatus

    return dataclasses.replace(record, status=TrialStatus.CRASHED, reason=KILLED,
                               samples_ms=[], stats=None, gbps=0.0, gflops=0.0,
                               stop_reason=None, retry=True)


def kill_trial(study: Path, number: int) -> None:
    """Trial ``number`` of the study in ``study`` rewritten in its journal as
    :func:`killed_from_outside` keeps it (in format 3, as ``sweeper run`` writes it)."""
    import json

    from sweeper.store import StudyStore

    record = next(t for t in StudyStore(study).records()[0] if t.number == number)
    journal = study / "trials.jsonl"
    lines = journal.read_text().splitlines()
    at = next(i for i, line in enumerate(lines) if json.loads(line).get("kind") == "trial"
              and json.loads(line).get("number") == number)
    lines[at] = json.dumps(killed_from_outside(record).to_json(), separators=(",", ":"))
    journal.write_text("\n".join(lines) + "\n")


def matmul_shapes(folder: Path, tables: list[str], shapes: list[tuple[int, int, int]]
                  ) -> tuple[Path, Path]:
    """A replay table of recorded bf16 matmul tables of one shape each (under
    ``benchmarks/tables``, all over ``benchmarks/spaces/matmul-odd.yaml``'s configs) and
    that space with ``shapes`` (M, N, K), in the tables' order, zipped: a study of
    several shapes on the recorded H200."""
    lines: list[str] = []
    for i, name in enumerate(tables):
        text = (ROOT / "benchmarks" / "tables" / name).read_text().splitlines()
        body = [line for line in text if not line.startswith("#")]
        lines += ([line for line in text if line.startswith("#")] + body[:1] if i == 0
                  else []) + body[1:]
    table = folder / "shapes.csv"
    table.write_text("\n".join(lines) + "\n")
    m, n, k = ([s[i] for s in shapes] for i in range(3))
    space = folder / "shapes.yaml"
    zipped = f"  shape: {{zip: {{M: {m}, N: {n}, K: {k}}}}}\n"
    space.write_text((ROOT / "benchmarks" / "spaces" / "matmul-odd.yaml").read_text().replace(
        "  M: [3000]\n  N: [5000]\n  K: [1000]\n", zipped))
    return table, space
