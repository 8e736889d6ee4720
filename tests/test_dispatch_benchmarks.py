"""The dispatch benchmarks run here: ``dispatch_regret.py`` from the recorded H200 tables
and on tables with several problems each, ``launcher_overhead.py`` on the interpreter."""

import ast
import importlib.util
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from sweeper.cli import main as sweeper_main

ROOT = Path(__file__).resolve().parent.parent


def script(name):
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def test_regret_of_the_recorded_h200_tables_rule_by_rule(capsys):
    assert script("dispatch_regret").main([]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "measure the candidates (chosen), per held-out problem of bf16 matmul fixed:"
    rows = [line for line in out if line.startswith("| dtype=bfloat16")]
    assert len(rows) == 6
    # 1152^3 (2592 KiB) runs 16 candidates, 1024^3's winner first; the best is 1.59 % off
    assert rows[0].startswith("| dtype=bfloat16 footprint=2592KiB | 16 | BLOCK_K=64 BLOCK_M=64 ")
    assert rows[0].endswith("| 1.59 % |")
    assert ("6 of 6 held-out problems: geomean regret 0.26 % (goal <= 2 %: met), worst "
            "1.59 % (goal <= 5 %: met)") in out
    rules = {line.split(" | ")[0][2:]: line.split(" | ")[1:] for line in out
             if line.startswith("| ") and " % (" in line}
    assert list(rules) == ["nearest winner (the pick)", "bracket geomean",
                           "interpolated log time", "minimax among tops",
                           "one config for all", "measure the candidates (chosen)"]
    assert rules["nearest winner (the pick)"][0] == "6.51 / 15.91 % (1)"
    chosen = rules["measure the candidates (chosen)"]
    assert len(chosen) == 9                    # 2 fixed splits, 7 leave-one-out families
    assert all(float(c.split(" / ")[0]) <= 2 and float(c.split(" / ")[1].split(" %")[0]) <= 5
               for c in chosen)


def test_regret_by_dimensions_from_tables_of_many_problems(tmp_path, capsys):
    """Tables with M, N, K columns, as the GPU spaces record: the exact arithmetic.  The
    held-out 3000x3000x4096 lies between 1024^3 and 4096^3: nearest (4096^3) runs BLOCK_M
    128 (1 % off); the candidates hold both tiles, so the best is found."""
    regret = script("dispatch_regret")
    head = ("# sweeper replay table v1\n# gpu: NVIDIA H200\n# sms: 132\n# l2_bytes: 0\n"
            "# kernel: matmul\nM,N,K,dtype,grid,BLOCK_M,status,median_ms,samples_ms\n")
    tuned = tmp_path / "tuned.csv"
    tuned.write_text(head + "1024,1024,1024,bfloat16,sms,64,ok,1.0,1.0\n"
                            "1024,1024,1024,bfloat16,sms,128,ok,2.0,2.0\n"
                            "4096,4096,4096,bfloat16,sms,64,ok,3.0,3.0\n"
                            "4096,4096,4096,bfloat16,sms,128,ok,2.0,2.0\n")
    held = tmp_path / "held.csv"
    held.write_text(head + "3000,3000,4096,bfloat16,sms,64,ok,1.0,1.0\n"
                           "3000,3000,4096,bfloat16,sms,128,ok,1.01,1.01\n"
                           "1500,1000,1000,bfloat16,sms,64,ok,1.04,1.04\n"
                           "1500,1000,1000,bfloat16,sms,128,ok,1.0,1.0\n"
                           "2000,2000,2000,bfloat16,sms,128,crashed,,\n")
    assert regret.main(["--tuned", str(tuned), "--held-out", str(held)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[4] == ("| M=3000 N=3000 K=4096 dtype=bfloat16 | 2 | grid=sms BLOCK_M=128 "
                      "| 0.00 % |")
    assert out[5] == ("| M=1500 N=1000 K=1000 dtype=bfloat16 | 2 | grid=sms BLOCK_M=64 "
                      "| 0.00 % |")
    rules = {line.split(" | ")[0][2:]: line.split(" | ")[1].rstrip(" |") for line in out
             if line.startswith("| ") and " % (" in line}
    assert rules["nearest winner (the pick)"] == "2.49 / 4.00 % (1)"
    assert rules["measure the candidates (chosen)"] == "0.00 / 0.00 % (2)"
    with pytest.raises(SystemExit):
        regret.main(["--tuned", str(tuned)])
    assert "give both --tuned and --held-out" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["dispatch-tuned.yaml", "dispatch-heldout.yaml"])
def test_the_gpu_spaces_plan_small_enough(name, capsys):
    assert sweeper_main(["plan", str(ROOT / "benchmarks" / "spaces" / name), "--device",
                         "interpret"]) == 0
    out = capsys.readouterr().out
    shapes = {"dispatch-tuned.yaml": "M 3 × N 3 × K 1", "dispatch-heldout.yaml": "shape 5"}
    assert "grid 2 × block 2" in out and shapes[name] in out
    assert f"would measure {32 * (9 if 'tuned' in name else 5)} " in out


def test_launcher_overhead_runs_on_the_interpreter(capsys):
    assert script("launcher_overhead").main(["--interpret", "--launches", "3",
                                             "--repeats", "1"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "| launch (Triton interpreter (CPU), 3 launches, best of 1) | per launch |"
    assert out[2].startswith("| tuned_kernel / plain | ") and out[2].endswith(
        "x (interpreter: ratio only) |")


def test_launcher_overhead_stub_prints_the_python_cost(capsys):
    assert script("launcher_overhead").main(["--stub", "--launches", "200",
                                             "--repeats", "1"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "| launch (no-op stub, 200 launches, best of 1) | per launch |"
    assert out[2].startswith("| plain stub call | ") and out[2].endswith(" µs |")
    assert out[4].startswith("| Python overhead | ") and out[4].endswith(" µs per call |")


TINY_COPY = """\
study: tiny
kernel: copy
sampler: exhaustive
params: {grid: [2], block: [32], BLOCK: [256, 512], dtype: [float32], footprint: [4KiB]}
measure: {warmup: 1, repeat: 2, cache: cold}
"""


def test_command_overhead_times_both_processes_on_the_interpreter(tmp_path, capsys):
    """Two processes (the bare loop, ``sweeper run``) from a cold cache: both rows, the
    ratio of the run over the bare loop, the goals not measured, the raw outputs kept."""
    space = tmp_path / "tiny.yaml"
    space.write_text(TINY_COPY)
    out = tmp_path / "out"
    assert script("command_overhead").main([str(space), "--device", "interpret", "--out",
                                            str(out), "--cache", "cold", "--runs",
                                            "bare,run,kernel-tuner"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "Kernel Tuner not timed: it needs a CUDA GPU"
    assert lines[1:3] == ["| run | Triton cache | wall s | over the bare loop | samples |",
                          "|---|---|---|---|---|"]
    assert lines[3].startswith("| bare | cold | ") and lines[3].endswith(" | 1.000x | 4 |")
    assert lines[4].startswith("| run | cold | ") and lines[4].endswith("x | 4 |")
    assert lines[5:] == ["sweeper run / bare loop, warm cache: not measured",
                         "sweeper run / Kernel Tuner, cold caches: not measured"]
    bare = (out / "bare-cold.stdout").read_text()
    assert bare.startswith("bare loop: 2 configs (0 abandoned, 4 samples), best median ")
    assert "done: 2 measured, 0 failed" in (out / "run-cold.stdout").read_text()
    assert "report: " in (out / "run-cold.stdout").read_text()
    results = json.loads((out / "results.json").read_text())
    assert [(r["name"], r["cache"], r["rc"]) for r in results["runs"]] == [
        ("bare", "cold", 0), ("run", "cold", 0)]


def test_command_overhead_changes_the_measure_settings_for_every_run(tmp_path, capsys):
    """``--measure abandon=1.5``: the changed space is written next to the outputs and both
    the bare loop and ``sweeper run`` measure by it (here, 12 samples: the bare loop takes a
    first chunk of 10, judges it by the sweep's rule, then the rest)."""
    space = tmp_path / "tiny.yaml"
    space.write_text(TINY_COPY.replace("repeat: 2", "repeat: 12"))
    out = tmp_path / "out"
    assert script("command_overhead").main([str(space), "--device", "interpret", "--out",
                                            str(out), "--cache", "cold", "--runs", "bare,run",
                                            "--measure", "abandon=1.5"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == (
        "tiny.yaml with measure: {'warmup': 1, 'repeat': 12, 'cache': 'cold', 'abandon': 1.5}")
    assert yaml.safe_load((out / "tiny.yaml").read_text())["measure"]["abandon"] == 1.5
    assert (out / "bare-cold.stdout").read_text().startswith("bare loop: 2 configs (")
    assert "done: 2 measured, 0 failed" in (out / "run-cold.stdout").read_text()
    assert json.loads((out / "results.json").read_text())["space"] == str(out / "tiny.yaml")


def test_command_overhead_refuses_a_measure_change_without_a_value(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        script("command_overhead").main(["spaces/copy.yaml", "--out", str(tmp_path),
                                         "--measure", "abandon"])
    assert exit_info.value.code == 2
    assert "--measure 'abandon': expected KEY=VALUE, e.g. abandon=1.5" in \
        capsys.readouterr().err


def test_command_overhead_ratios_against_the_goals():
    bench = script("command_overhead")
    rows = [bench.Timed("bare", "warm", 10.0, 0, 500), bench.Timed("run", "warm", 11.0, 0, 480),
            bench.Timed("run-no-report", "warm", 10.5, 0), bench.Timed("run", "cold", 30.0, 0),
            bench.Timed("kernel-tuner", "cold", 40.0, 0)]
    lines = bench.table(rows)
    assert lines[2:5] == ["| bare | warm | 10.00 | 1.000x | 500 |",
                          "| run | warm | 11.00 | 1.100x | 480 |",
                          "| run-no-report | warm | 10.50 | 1.050x |  |"]
    assert lines[5:7] == ["| run | cold | 30.00 |  |  |", "| kernel-tuner | cold | 40.00 |  |  |"]
    assert lines[7:] == ["sweeper run / bare loop, warm cache: 1.100x (goal <= 1.15x: met)",
                         "sweeper run / Kernel Tuner, cold caches: 0.750x (goal <= 0.5x: "
                         "not met)"]
    failed = bench.table([bench.Timed("bare", "warm", 10.0, 0),
                          bench.Timed("run", "warm", 3.0, 2)])
    assert failed[3] == "| run | warm | 3.00 (exit 2) |  |  |"
    assert failed[4] == "sweeper run / bare loop, warm cache: a run failed (see its .stderr)"


def test_command_overhead_rounds_are_interleaved_and_judged_by_their_medians(tmp_path, capsys):
    """``--rounds 2``: each run twice, in turn (bare, run, bare, run), each row over the
    bare loop of its round, the goal from the median walls; a round's outputs kept apart."""
    bench = script("command_overhead")
    walls = [(10.0, 12.0), (12.0, 12.6), (11.0, 12.1)]      # (bare, run) of each round
    rows = [bench.Timed(name, "warm", wall, 0, round=i)
            for i, pair in enumerate(walls, 1)
            for name, wall in zip(("bare", "run"), pair, strict=True)]
    lines = bench.table(rows)
    assert lines[2:4] == ["| bare (1) | warm | 10.00 | 1.000x |  |",
                          "| run (1) | warm | 12.00 | 1.200x |  |"]
    assert lines[-3:] == ["sweeper run / bare loop, warm cache: 1.100x (goal <= 1.15x: met)",
                          "sweeper run / Kernel Tuner, cold caches: not measured",
                          "(ratios of the median wall over 3 rounds)"]
    space = tmp_path / "tiny.yaml"
    space.write_text(TINY_COPY)
    out = tmp_path / "out"
    assert bench.main([str(space), "--device", "interpret", "--out", str(out), "--cache",
                       "cold", "--runs", "bare,run", "--rounds", "2"]) == 0
    names = sorted(p.name for p in out.glob("*.stdout"))
    assert names == ["bare-cold-2.stdout", "bare-cold.stdout", "run-cold-2.stdout",
                     "run-cold.stdout"]
    printed = capsys.readouterr().out
    assert "| run (2) | cold | " in printed
    assert "(ratios of the median wall over 2 rounds)" in printed
    with pytest.raises(SystemExit):
        bench.main([str(space), "--out", str(out), "--rounds", "0"])
    assert "--rounds 0: at least 1" in capsys.readouterr().err


def test_command_overhead_kernel_tuner_script_covers_the_cuda_space(tmp_path):
    """Every config of spaces/cuda-copy.yaml is one entry of the script's grid table, keyed
    by VEC, UNROLL, block and the grid label's index (here with the interpreter's facts)."""
    path, count = script("command_overhead").write_kernel_tuner(
        tmp_path, str(ROOT / "spaces" / "cuda-copy.yaml"), "interpret")
    assert count == 225
    text = path.read_text()
    compile(text, str(path), "exec")
    grids = ast.literal_eval(text.split("grids = ", 1)[1].split("  #", 1)[0])
    assert len(grids) == 225 and "1,4,1024,4" in grids
    assert "params[\"GRID_I\"] = list(range(5))" in text and "iterations=5" in text


def test_cli_latency_times_the_commands_that_answer_at_once(capsys):
    """Each command as a fresh process: every one answers and imports none of the heavy
    libraries.  Its time is the script's to judge on a quiet machine (the 0.5 s goal),
    not a test's: a goal of 5 s failed here at 5.07 and 6.1 s while other suites shared
    the two cores, so the goal here only bounds a hang."""
    bench = script("cli_latency")
    status = bench.main(["--repeat", "1", "--goal", "120"])
    out = capsys.readouterr().out
    assert status == 0, out
    assert out.count("| none |") == 6 and "| sweeper run (a bad space file) |" in out
    assert out.rstrip().endswith(": met")
    report = ("import time: self [us] | cumulative | imported package\n"
              "import time:       120 |        120 |   _io\n"
              "import time:      2000 |      90000 | torch\n"
              "import time:        50 |         50 |     torch._C\n")
    assert bench.imported(report) == {"imported package", "_io", "torch", "torch._C"}


def test_nvml_contention_pollers_read_the_state_with_and_without_the_energy_counter(
        monkeypatch):
    """The pollers beside the worker read what a worker's NVML poller reads, the energy
    counter only where asked, until stopped; they report their reads and time."""
    import queue
    import threading
    import types

    calls = []

    def call(name):
        return lambda *args: calls.append(name) or 1

    fake = types.SimpleNamespace(
        nvmlInit=lambda: None, nvmlDeviceGetHandleByIndex=lambda i: "h",
        NVML_CLOCK_SM=0, NVML_CLOCK_MEM=1, NVML_TEMPERATURE_GPU=0,
        **{n: call(n) for n in ("nvmlDeviceGetTotalEnergyConsumption",
                                "nvmlDeviceGetClockInfo", "nvmlDeviceGetTemperature",
                                "nvmlDeviceGetPowerUsage",
                                "nvmlDeviceGetCurrentClocksEventReasons")})
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    bench = script("nvml_contention")
    for energy in (True, False):
        calls.clear()
        stop, out = threading.Event(), queue.Queue()
        poller = threading.Thread(target=bench.poll, args=(stop, energy, out))
        poller.start()
        time.sleep(5 * bench.PERIOD_S)
        stop.set()
        poller.join(5)
        reads, spent = out.get(timeout=5)
        assert reads >= 1 and spent >= 0
        assert calls.count("nvmlDeviceGetClockInfo") == 2 * reads
        assert calls.count("nvmlDeviceGetTotalEnergyConsumption") == (reads if energy else 0)


def test_model_accuracy_reads_tables_kept_under_benchmarks_too(capsys):
    """Held-out set 9's tables live in benchmarks/tables, not tests/data/replay: each is
    found and scored (rank correlation, the rank of the first config within 98 %)."""
    script("model_accuracy").main(["--tables", "held-out-9"])
    rows = [line for line in capsys.readouterr().out.splitlines()
            if line.startswith("| h200-")]
    assert len(rows) == 6
    for row in rows:
        rho, rank = row.split("|")[2:4]
        assert -1 <= float(rho) <= 1 and int(rank) >= 1


@pytest.mark.parametrize("name", sorted(p.stem for p in (ROOT / "benchmarks").glob("*.py")))
def test_every_benchmark_script_imports(name):
    """A script run only on the GPU machine, or rarely, still imports against the current
    package (a renamed function breaks it here, not in a lent GPU's minutes)."""
    module = script(name)
    assert callable(getattr(module, "main", None)), f"{name}.py has no main()"


def test_command_overhead_reads_nvml_once_in_the_poll_once_run(tmp_path, monkeypatch):
    """``run-poll-once`` is ``sweeper run`` (report included) with the workers' NVML poll
    period beyond any run, so the pair of runs prices the poller; ``run`` keeps the
    environment as it is."""
    bench = script("command_overhead")
    seen = {}

    def fake_run(command, cwd, env, **kwargs):
        seen[tuple(command)] = env
        return subprocess.CompletedProcess(command, 0, "", "")
    monkeypatch.setattr(bench.subprocess, "run", fake_run)
    monkeypatch.delenv("SWEEPER_NVML_PERIOD_MS", raising=False)
    studies = tmp_path / "studies"
    for name in ("run", "run-poll-once"):
        command = bench.sweeper_command("s.yaml", "interpret", studies, name != "run-no-report")
        row = bench.timed(name, "warm", [*command, name], tmp_path, tmp_path / "tc")
        assert row.rc == 0 and "--no-report" not in command
    envs = {command[-1]: env for command, env in seen.items()}
    assert "SWEEPER_NVML_PERIOD_MS" not in envs["run"]
    assert float(envs["run-poll-once"]["SWEEPER_NVML_PERIOD_MS"]) >= 1e6
    assert bench.median_of([bench.Timed("run-poll-once", "warm", 2.0, 0)], "run-poll-once",
                           "warm").wall_s == 2.0
