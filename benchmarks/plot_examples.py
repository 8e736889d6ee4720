"""The example footprint curve and roofline in docs/, from recorded H200 data, no GPU.

    python benchmarks/plot_examples.py [OUT_DIR]      # default: docs/

- The footprint curve: spaces/copy.yaml replayed over the five recorded H200 copy tables
  of one footprint each (8 MiB to 4 GiB, fp32, cold), merged into one table.
- The roofline: that study's winners and spaces/matmul.yaml replayed from the recorded
  bf16 table at 1024³, 2048³ and 4096³ (2, 8, 32 MiB).
- Both against the H200's ceilings as `sweeper calibrate` measured them (the snapshot in
  studies/h200-copy-fp32/study.json) and its physical bounds from the NVML facts that
  docs/benchmarks.md gives (3201 MHz x 6016-bit memory, 132 SMs at 1980 MHz, Hopper):
  a replay records neither, so they are added to the replayed studies' study.json.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TABLES = ROOT / "tests" / "data" / "replay"
COPY = (["h200-copy-8m.csv", "h200-copy-128m.csv", "h200-copy-256m.csv", "h200-copy.csv",
         "h200-copy-4g.csv"], ["8MiB", "128MiB", "256MiB", "1GiB", "4GiB"], "spaces/copy.yaml")
MATMUL = (["h200-matmul-1k.csv", "h200-matmul-2k.csv", "h200-matmul.csv"],
          ["2MiB", "8MiB", "32MiB"], "spaces/matmul.yaml")


def combined_table(folder: Path, names: list[str], footprints: list[str], space_file: str
                   ) -> tuple[Path, Path]:
    """One replay table of recorded tables of one footprint each, and the space file's
    axes over all those footprints (without its trial budget: every config, each size)."""
    lines: list[str] = []
    for i, name in enumerate(names):
        text = (TABLES / name).read_text().splitlines()
        body = [line for line in text if not line.startswith("#")]
        if i == 0:
            lines += [line for line in text if line.startswith("#")] + body[:1]
        lines += body[1:]
    table = folder / f"{Path(space_file).stem}.csv"
    table.write_text("\n".join(lines) + "\n")
    space = [line for line in (ROOT / space_file).read_text().splitlines()
             if not line.startswith("budget:")]
    space = [f"  footprint: [{', '.join(footprints)}]" if line.startswith("  footprint:")
             else line for line in space]
    space_path = folder / Path(space_file).name
    space_path.write_text("\n".join(space) + "\n")
    return table, space_path


def h200_limits() -> dict[str, object]:
    """The H200's calibrated ceilings and physical bounds, as a study records them."""
    from sweeper.bounds import HardwareFacts, Sourced, derive_bounds

    meta = json.loads((ROOT / "studies/h200-copy-fp32/study.json").read_text())
    facts = HardwareFacts(gpu="NVIDIA H200", sms=132, l2_bytes=60 << 20, capability=(9, 0),
                          mem_mhz=Sourced(3201, "NVML"), bus_bits=Sourced(6016, "NVML"),
                          sm_mhz=Sourced(1980, "NVML"))
    return {"ceilings": meta["ceilings"], "bounds": derive_bounds(facts).to_json()}


def main(out: Path) -> None:
    from sweeper.cli import main as sweeper
    from sweeper.store import StudyStore

    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp())
    studies = work / "studies"
    for tables, sizes, space_file in (COPY, MATMUL):
        table, space = combined_table(work, tables, sizes, space_file)
        assert sweeper(["run", str(space), "--device", f"replay:{table}", "--studies-dir",
                        str(studies), "--quiet", "--no-report"]) == 0
    for root in studies.iterdir():
        StudyStore(root).update_meta(**h200_limits())
    assert sweeper(["report", str(studies / "copy-fp32-replay")]) == 0
    shutil.copy(studies / "copy-fp32-replay" / "heatmaps" / "footprint_float32.png",
                out / "footprint-h200-copy.png")
    assert sweeper(["roofline", "--studies-dir", str(studies), "-o",
                    str(out / "roofline-h200.png")]) == 0
    shutil.rmtree(work)


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs")
