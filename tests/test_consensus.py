"""A winner every GPU agrees on: the finals measured on each GPU, recorded per GPU, and
read together (sweeper.consensus): agreed, disagreed and tied cases on synthetic medians,
the console and report text, the tuning entry, and a sweep on two fake GPUs."""

from __future__ import annotations

import json

import pytest

from sweeper.consensus import AGREE, agreement, export_fields
from sweeper.finals import MIN_ROUNDS, ROUNDS, Finalist, FinalRecord
from sweeper.measure import PRACTICAL, summarize
from sweeper.space import Config, Problem
from sweeper.store import GpuSlot, ProblemKey, TrialRecord
from sweeper.trial import TrialStatus
from sweeper.winners import Winners

PROBLEM = ProblemKey("float32", 4096, "cold", (("n", 1024),))
H200 = "NVIDIA H200"


def _final(gpu: int | None, medians: dict[int, float], winner: int | None = None,
           after: int = 9) -> FinalRecord:
    """A final on GPU ``gpu`` whose finalists have exactly ``medians`` (ms)."""
    rows = [Finalist(number=n, samples_ms=[m] * 10, stats=summarize([m] * 10), gbps=1.0)
            for n, m in medians.items()]
    won = winner if winner is not None else min(medians, key=lambda n: medians[n])
    return FinalRecord(problem=PROBLEM, finalists=rows, tied=[won], winner=won,
                       after_trial=after, gpu=None if gpu is None else GpuSlot(gpu, H200))


def _trial(number: int, block: int) -> TrialRecord:
    config = Config(grid=4, block=block, meta={"BLOCK": 1024},
                    problem=Problem("float32", 4096, (("n", 1024),)))
    return TrialRecord(number=number, choice={"grid": "4", "block": str(block),
                                              "BLOCK": "1024", "dtype": "float32",
                                              "footprint": "4KiB"},
                       status=TrialStatus.OK, config=config, samples_ms=[1.0] * 10,
                       stats=summarize([1.0] * 10), gbps=1.0)


def test_the_threshold_is_the_compare_threshold():
    assert AGREE == PRACTICAL == 0.01


def test_one_config_within_1pct_everywhere_is_agreed_and_named():
    a = agreement([_final(0, {1: 1.000, 2: 1.004, 3: 1.10}),
                   _final(1, {1: 1.003, 2: 1.000, 3: 1.00})])
    assert a.agreed and a.chosen == 1           # GPU 0's own winner, 0.3 % off on GPU 1
    assert a.winners == {0: 1, 1: 2} or a.winners == {0: 1, 1: 3}
    assert a.worst == pytest.approx(0.003)
    assert a.slowdown[3] == pytest.approx({0: 0.1, 1: 0.0})
    assert a.headline() == "one config for every GPU: #1 (worst 0.3 % from a GPU's best)"
    assert a.why() == ("within 1% of the best on all 2 GPUs (worst 0.3 %): every rank can "
                       "use it")


def test_a_config_exactly_1pct_off_still_agrees_and_just_over_does_not():
    at = agreement([_final(0, {1: 1.0, 2: 1.02}), _final(1, {1: 1.01, 2: 1.0})])
    assert at.agreed and at.chosen == 1 and at.worst == pytest.approx(0.01)
    over = agreement([_final(0, {1: 1.0, 2: 1.02}), _final(1, {1: 1.0101, 2: 1.0})])
    assert not over.agreed


def test_gpus_that_disagree_keep_their_winners_and_export_the_minimax_config():
    a = agreement([_final(0, {1: 1.00, 2: 1.03, 3: 1.015}),
                   _final(1, {1: 1.05, 2: 1.00, 3: 1.02})])
    assert not a.agreed
    assert a.winners == {0: 1, 1: 2}
    assert a.chosen == 3 and a.worst == pytest.approx(0.02)     # 1.5 % and 2 %: least worst
    assert a.apart() == ("GPU 0's #1 is 5.0 % slower on GPU 1; GPU 1's #2 is 3.0 % slower "
                         "on GPU 0")
    assert a.headline() == (
        "the GPUs disagree (no config within 1% of the best on every GPU): GPU 0's #1 is "
        "5.0 % slower on GPU 1; GPU 1's #2 is 3.0 % slower on GPU 0; exported: #3, the "
        "best common config (worst 2.0 % from a GPU's best), with each GPU's winner "
        "alongside")


def test_ties_fall_to_the_gpus_own_winners_then_the_mean_then_the_lower_number():
    # both #1 and #2 agree; #2 is the winner on both GPUs (their rules chose it)
    own = agreement([_final(0, {1: 1.0, 2: 1.005}, winner=2),
                     _final(1, {1: 1.0, 2: 1.005}, winner=2)])
    assert own.agreed and own.chosen == 2
    # disagreeing, #2 and #3 share the worst slowdown: the smaller mean wins
    mean = agreement([_final(0, {1: 1.0, 2: 1.05, 3: 1.05}), _final(1, {1: 1.1, 2: 1.04,
                                                                       3: 1.0})])
    assert not mean.agreed and mean.chosen == 3
    # all equal, #5 and #7 each one GPU's winner: the lower of those two, whatever order
    # the records came in (#4, the lowest, is no GPU's winner)
    same = [_final(1, {4: 1.0, 7: 1.0, 5: 1.0}, winner=7), _final(0, {7: 1.0, 4: 1.0, 5: 1.0},
                                                                   winner=5)]
    assert agreement(same).chosen == 5 == agreement(same[::-1]).chosen
    neither = [_final(0, {4: 1.0, 7: 1.0, 5: 1.0}, winner=7),
               _final(1, {4: 1.0, 7: 1.0, 5: 1.0}, winner=5)]
    assert agreement([*neither, _final(2, {4: 1.0, 7: 1.0, 5: 1.0}, winner=4)]).chosen == 4


def test_a_finalist_missing_on_one_gpu_cannot_be_every_gpus_config():
    a = agreement([_final(0, {1: 1.0, 2: 1.001}), _final(1, {2: 1.0})])
    assert set(a.slowdown) == {2} and a.chosen == 2 and a.agreed


def test_winners_group_the_per_gpu_finals_and_pick_the_common_config():
    trials = [_trial(1, 32), _trial(2, 64), _trial(3, 128)]
    finals = [_final(0, {1: 1.00, 2: 1.03, 3: 1.015}), _final(1, {1: 1.05, 2: 1.00, 3: 1.02})]
    winners = Winners.from_records(finals)
    assert winners.finals[PROBLEM] is finals[0] and winners.per_gpu[PROBLEM] == finals
    pick = winners.picks(trials)[PROBLEM]
    assert pick.trial.number == 3 and pick.median_ms == pytest.approx(1.015)
    assert pick.chosen_by == "best common config of 2 GPUs"
    assert pick.median_from == ("interleaved finals on 2 GPUs: 5 rounds x 10 samples each; "
                                "this median on GPU 0 (NVIDIA H200)")
    # a later set (after a newer trial) replaces the old one as a whole
    later = [_final(0, {1: 1.0, 2: 1.001}, after=12), _final(1, {1: 1.0, 2: 1.002}, after=12)]
    again = Winners.from_records([*finals, *later])
    assert again.per_gpu[PROBLEM] == later
    assert again.picks(trials)[PROBLEM].chosen_by == "agreement of 2 GPUs"


def test_a_final_without_a_gpu_loads_and_is_chosen_as_on_one_gpu():
    final = _final(None, {1: 1.0, 2: 1.2})
    data = json.loads(json.dumps(final.to_json()))
    assert data["gpu"] is None
    del data["gpu"]                                       # a journal older than this
    loaded = FinalRecord.from_json(data)
    assert loaded.gpu is None
    with_gpu = FinalRecord.from_json(json.loads(json.dumps(_final(1, {1: 1.0}).to_json())))
    assert with_gpu.gpu == GpuSlot(1, H200)
    pick = Winners.from_records([loaded]).picks([_trial(1, 32), _trial(2, 64)])[PROBLEM]
    assert pick.agreement is None and pick.chosen_by == "interleaved final"
    assert pick.median_from == "interleaved final: 5 rounds x 10 samples"


def test_the_tuning_entry_carries_each_gpus_winner_and_why_it_exported_its_config():
    trials = {n: _trial(n, b) for n, b in ((1, 32), (2, 64), (3, 128))}
    a = agreement([_final(0, {1: 1.00, 2: 1.03, 3: 1.015}),
                   _final(1, {1: 1.05, 2: 1.00, 3: 1.02})])
    fields = export_fields(a, trials)
    assert fields["agreement"] == {
        "agreed": False, "gpus": [0, 1], "exported": "best common config", "trial": 3,
        "worst_pct": 2.0, "why": "no config is within 1% of the best on all 2 GPUs; this "
        "one's worst slowdown (2.0 %) is the smallest; gpu_winners lists each GPU's own"}
    assert [(w["gpu_index"], w["trial"], w["block"]) for w in fields["gpu_winners"]] == \
        [(0, 1, 32), (1, 2, 64)]
    assert fields["gpu_winners"][0]["slowdown_pct"] == {"0": 0.0, "1": 5.0}
    assert export_fields(None, trials) == {}


def test_two_fake_gpus_measure_the_finals_on_both_and_every_output_says_so(
        write_space, tmp_path, capsys):
    """Two workers on the interpreter: each problem's finals on both (one record per
    GPU, the same finalists and the baseline), the console's winner line and report.md
    give the agreement, report.json and the tuning entry the choice."""
    from sweeper.cli import main
    from sweeper.store import StudyStore
    from tests.conftest import SMALL_SPACE

    path = write_space(SMALL_SPACE)
    assert main(["run", str(path), "--device", "interpret", "--gpus", "0,1",
                 "--studies-dir", str(tmp_path), "--quiet"]) == 0
    out = capsys.readouterr().out
    store = StudyStore(tmp_path / "tiny-interpret")
    finals = store.read(FinalRecord)
    assert [f.gpu.index for f in finals] == [0, 1]
    assert {f.gpu.name for f in finals} == {"Triton interpreter (CPU)"}
    assert len({tuple(sorted(r.number for r in f.finalists)) for f in finals}) == 1
    assert all(f.baseline is not None and MIN_ROUNDS <= f.rounds <= ROUNDS and
               len(f.baseline.samples_ms) == f.samples_per_round * f.rounds == 5 * f.rounds
               for f in finals)
    assert len({f.after_trial for f in finals}) == 1
    trials = store.records()[0]
    a = Winners.of(store).agreements(trials)[finals[0].problem]
    line = next(x for x in out.splitlines() if x.startswith("winner, "))
    assert line.startswith(f"winner, float32 4KiB cold, after {finals[0].rounds} interleaved "
                           f"rounds over {len(finals[0].finalists)} finalists on each of 2 "
                           f"GPUs: #{a.chosen} grid=")
    assert line.endswith(f" on GPU 0; {a.headline()}")
    report = (tmp_path / "tiny-interpret" / "report.md").read_text()
    assert ("Across GPUs (GPU 0 (Triton interpreter (CPU)), GPU 1 (Triton interpreter "
            f"(CPU)); the same finalists in the same rounds on each): {a.headline()}.") in report
    assert "| # | GPU 0 % from best | GPU 1 % from best | worst % |  |" in report
    data = json.loads((tmp_path / "tiny-interpret" / "report.json").read_text())
    assert [(x["exported"], x["agreed"]) for x in data["agreements"]] == [(a.chosen, a.agreed)]
    assert main(["export", str(tmp_path / "tiny-interpret"), "-o",
                 str(tmp_path / "t.json")]) == 0
    entry = json.loads((tmp_path / "t.json").read_text())["entries"][0]
    assert entry["trial"] == entry["agreement"]["trial"] == a.chosen
    assert entry["chosen_by"] == ("agreement of 2 GPUs" if a.agreed
                                  else "best common config of 2 GPUs")
    assert [w["gpu_index"] for w in entry["gpu_winners"]] == [0, 1]


def test_one_gpu_keeps_one_final_without_a_gpu(write_space, tmp_path):
    from sweeper.devices import open_device
    from tests.conftest import SMALL_SPACE, sweep_study

    store, summary = sweep_study(write_space(SMALL_SPACE), open_device("interpret"),
                                 tmp_path / "s")
    finals = store.read(FinalRecord)
    assert len(finals) == 1 and finals[0].gpu is None and summary.finals == finals
    assert Winners.of(store).agreements(store.records()[0]) == {}
