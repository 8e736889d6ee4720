"""The sweep's bookkeeping does not grow with the space (issue #25, item 10), checked by
counting what it touches, never by timing it: ``benchmarks/bookkeeping_scale.py``
measures the speed.

- the exhaustive sampler reads a bounded number of choices per proposal, and none to
  say how many are left;
- Optuna, asked and told through the sweep's distributions, never walks an axis's
  labels;
- a space is sorted out with each step of resolving run over only the labels it reads,
  with the same valid configs, reasons and places in the file as resolving each one;
- the ruled-out configs are journaled with one fsync, not one each;
- a worker sharing a study's journal parses each line about once, not at every trial.
"""

from __future__ import annotations

import itertools
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path

import optuna
import pytest

from sweeper.samplers import ExhaustiveSampler
from sweeper.space import Configs, Invalid, load_space, parse_space
from sweeper.store import StudyStore, TrialRecord
from sweeper.sweep._optuna import Labels
from sweeper.trial import TrialStatus

ROOT = Path(__file__).resolve().parent.parent
FACTS = {"sms": 132, "l2_bytes": 62914560}


class CountedChoices(Sequence[Mapping[str, str]]):
    """``n`` choices made on demand, counting how many are read."""

    def __init__(self, n: int) -> None:
        self.n, self.read = n, 0

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index):          # type: ignore[no-untyped-def]
        self.read += 1
        return {"a": str(index // 100), "b": str(index % 100)}

    def index_of(self, choice: Mapping[str, str]) -> int | None:
        return int(choice["a"]) * 100 + int(choice["b"])


def test_the_exhaustive_sampler_reads_a_bounded_number_of_choices_per_proposal():
    choices = CountedChoices(100_000)
    sampler = ExhaustiveSampler(choices, seed=0)
    dists = {"a": Labels([str(i) for i in range(1000)]),
             "b": Labels([str(i) for i in range(100)])}
    study = optuna.create_study(sampler=sampler)
    proposed = set()
    for _ in range(50):
        assert sampler.remaining(study) == 100_000 - len(proposed)
        trial = study.ask(dists)
        proposed.add((trial.params["a"], trial.params["b"]))
        study.tell(trial, 1.0)
        assert len(sampler.upcoming(4)) == 4
    assert len(proposed) == 50
    assert choices.read <= 50 * 16          # whatever the number of choices


def test_optuna_never_walks_an_axis_s_labels_through_the_sweep_s_distributions(monkeypatch):
    import optuna.distributions as od

    labels = [str(i) for i in range(5000)]
    walked = []
    equal = od._categorical_choice_equal
    monkeypatch.setattr(od, "_categorical_choice_equal",
                        lambda a, b: walked.append(1) or equal(a, b))
    choices = [{"x": x} for x in labels]
    study = optuna.create_study(sampler=ExhaustiveSampler(choices, seed=0))
    dists = {"x": Labels(labels)}
    study.add_trial(optuna.trial.create_trial(params={"x": "7"}, distributions=dists,
                                              value=1.0))
    for _ in range(20):
        trial = study.ask(dists)
        study.tell(trial, 1.0)
    assert not walked
    assert len({t.params["x"] for t in study.trials}) == 21
    assert Labels(labels) == dists["x"] and hash(Labels(labels)) == hash(dists["x"])


SPACES = ["spaces/copy.yaml", "spaces/matmul-shapes.yaml", "spaces/copy-strided-oat.yaml",
          "spaces/matmul-8k.yaml", "benchmarks/spaces/dispatch-heldout.yaml"]

ZIPPED = """
kernel: matmul
params:
  grid: [sms, 2*sms, "cdiv(n, 4096)"]
  M: [1024, 4096]
  tiles:
    zip:
      BLOCK_M: [64, 128, 128, 256]
      BLOCK_N: [64, 128, 256, 256]
  num_stages: {values: [2, 3, 4], when: "BLOCK_M >= 128"}
constraints: ["BLOCK_M * BLOCK_N <= 32768", "grid <= 2 * sms"]
"""


def resolved_one_by_one(space, max_footprint):
    """Every config resolved on its own, as the sweep did before :class:`Configs`."""
    dims = space.choices()
    valid, ruled = [], []
    for labels in itertools.product(*dims.values()):
        choice = space.expand(dict(zip(dims, labels, strict=True)))
        try:
            space.resolve(choice, FACTS, max_footprint)
            valid.append(choice)
        except Invalid as why:
            ruled.append((choice, str(why), why.origin))
    return valid, ruled


@pytest.mark.parametrize("name", [*SPACES, "zipped"])
@pytest.mark.parametrize("max_footprint", [None, 1 << 20])
def test_a_space_is_sorted_out_as_resolving_each_config_does(name, max_footprint):
    space = parse_space(textwrap.dedent(ZIPPED), file="z.yaml") if name == "zipped" \
        else load_space(ROOT / name)
    configs = Configs(space, FACTS, max_footprint)
    valid, ruled = resolved_one_by_one(space, max_footprint)
    assert [list(configs.expanded(i).items()) for i in range(len(configs))] == \
        [list(c.items()) for c in valid]
    assert [(c, str(why), why.origin) for c, why in configs.ruled_out()] == ruled
    for i, choice in enumerate(configs):
        assert configs.index_of(choice) == i and space.expand(choice) == valid[i]
    assert configs.index_of({**space.choices(), "grid": "nowhere"}) is None


def test_each_step_runs_over_the_labels_it_reads_not_over_every_config(write_space,
                                                                        monkeypatch):
    from sweeper.core import _configs

    path = write_space("""
        kernel: copy
        params:
          grid: {range: [1, 2000]}
          block: [32, 64, 128, 256, 512, 1024]
          BLOCK: {pow2: [256, 32768]}
          footprint: [1GiB]
        constraints: ["BLOCK >= block"]
    """)
    space = load_space(path)
    started = []
    start = _configs.Resolving.start
    monkeypatch.setattr(_configs.Resolving, "start",
                        classmethod(lambda cls, facts: started.append(1) or start(facts)))
    configs = Configs(space, FACTS)
    assert space.size == 96_000 and len(configs) == 96_000 - 3 * 2000
    assert len(started) <= 2 * 2000 + 100   # grid twice (its value, its check), not per config
    assert str(next(configs.ruled_out())[1]) == \
        "constraint 'BLOCK >= block' is false (BLOCK=256, block=512)"


def test_ruled_out_configs_are_journaled_with_one_fsync(tmp_path, monkeypatch):
    import sweeper.store._journal as journal

    store = StudyStore(tmp_path / "s")
    store.create({"study": "s", "kernel": "copy"})
    synced = []
    fsync = journal.os.fsync
    monkeypatch.setattr(journal.os, "fsync", lambda fd: synced.append(fd) or fsync(fd))
    records = [TrialRecord(number=i, choice={"BLOCK": str(i)}, status=TrialStatus.INVALID,
                           reason="ruled out") for i in range(500)]
    store.append_all(records)
    assert len(synced) <= 2                 # the journal, and its new entry in the folder
    assert store.records()[0] == records
    with pytest.raises(Exception, match="trial #3 again"):
        store.append_all([records[3]])
    assert len(store.records()[0]) == 500


def test_a_worker_parses_each_line_of_a_shared_journal_about_once(tmp_path, monkeypatch,
                                                                  capsys):
    """A worker reads the shared journal at each claim and each append (other workers
    append to it): each read parses only the lines appended since, so a sweep parses each
    line a bounded number of times, not every line again for each trial; also past a line
    set aside, which workers never repair."""
    import sweeper.store._journal as journal
    from sweeper.cli import main

    monkeypatch.chdir(ROOT)
    table = ROOT / "tests" / "data" / "replay" / "h200-copy.csv"
    worker = ["worker", "spaces/copy.yaml", "--device", f"replay:{table}", "--study", "w",
              "--studies-dir", str(tmp_path)]
    assert main([*worker, "--trials", "3"]) == 0
    with (tmp_path / "w" / "trials.jsonl").open("ab") as journal_file:
        journal_file.write(b"garbage\n")
    capsys.readouterr()
    parsed = []
    parse_line = journal.parse_line
    monkeypatch.setattr(journal, "parse_line",
                        lambda text, kept=True: parsed.append(1) or parse_line(text, kept))
    assert main(worker) == 0
    lines = len((tmp_path / "w" / "trials.jsonl").read_bytes().splitlines())
    out, err = capsys.readouterr()
    assert lines == 211 and "201 configs measured and kept" in out
    assert "trials.jsonl:10: not JSON" in err
    assert len(parsed) <= 3 * lines          # it was 4 reads of the whole journal a trial


def test_a_map_of_thousands_of_columns_is_drawn_within_the_widest_size_without_cell_text():
    import numpy as np
    import pandas as pd

    from sweeper.report._draw import MAX_TICKS, MAX_WIDTH, heatmap_figure
    from sweeper.report._heatmaps import HeatmapData

    grids = [str(g) for g in range(1, 2001)]
    values = pd.DataFrame(np.arange(6 * 2000, dtype=float).reshape(6, 2000),
                          index=[32, 64, 128, 256, 512, 1024], columns=grids)
    data = HeatmapData(name="wide", title="wide", values=values,
                       notes=pd.DataFrame("", index=values.index, columns=grids),
                       column_labels=grids, best=(64, "7"), metric="gbps")
    fig = heatmap_figure(data)
    ax = fig.axes[0]
    assert fig.get_size_inches()[0] <= MAX_WIDTH
    assert not ax.texts                          # no text in 12,000 cells
    assert len(ax.get_xticks()) <= MAX_TICKS
