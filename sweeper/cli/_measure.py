"""Commands that measure besides a sweep: ``ab`` (two values of one axis, interleaved)
and ``calibrate`` (this GPU's copy and matmul ceilings)."""

from __future__ import annotations

import argparse

from sweeper.cli._inputs import fraction_option, space_source
from sweeper.engine import kernel_for, space_and_device
from sweeper.errors import SweeperError
from sweeper.options import study_folder


def cmd_ab(args: argparse.Namespace) -> int:
    """``sweeper ab``: time two values of one axis against each other, print both medians
    and the verdict, and say where the samples are; a replay device is refused, as it has
    no samples to interleave."""
    from sweeper.ab import held_text, run_ab, samples_name
    from sweeper.compare import ratio_text
    from sweeper.measure import summarize

    threshold = fraction_option("--threshold", args.threshold)
    space, device = space_and_device(space_source(args), args.device)
    if device.replays:
        raise SweeperError("ab measures; it cannot run on a replay device")
    from sweeper.study import study_name

    name = samples_name(args.vary, space)
    # named as the device's study is: an interpreter's samples never replace a GPU's
    out = study_folder(args.studies_dir, f"{study_name(space, device)}-ab") / f"{name}.json"
    kernel = kernel_for(space, device)
    replaced = out.exists()         # the same comparison run before: its samples go
    result = run_ab(space, kernel, device, args.vary, out, threshold)
    c = result.comparison
    fixed = held_text(result.fixed)
    print(f"A/B on {result.key} with {fixed} fixed; {device.facts().name}")
    if result.shrunk is not None:
        from sweeper.space import format_size

        print(f"shrunk to fit {format_size(device.facts().max_footprint)}: {result.shrunk}")
    for label in (result.a, result.b):
        s = summarize(result.samples[label])
        print(f"  {result.key}={label}: median {s.median:.4g} ms, 95% CI [{s.ci_lo:.4g}, "
              f"{s.ci_hi:.4g}], {s.n} samples")
    print(f"verdict: B ({result.key}={result.b}) is {c.verdict.value} than A "
          f"({result.key}={result.a}): time ratio {ratio_text(c.ratio)} "
          f"[{ratio_text(c.lo)}, {ratio_text(c.hi)}]"
          .replace("SAME than", "the SAME as").replace("UNCLEAR than", "UNCLEAR against")
          + f"; practical threshold {100 * c.threshold:g}%"
          + (" (the CIs are apart, the medians within it)" if c.practically_same else ""))
    if device.note:
        print(f"note: {device.note}")
    print(f"samples: {out}" + (" (replacing those of the same comparison run before)"
                               if replaced else ""))
    return 0


def cmd_calibrate(args: argparse.Namespace) -> int:
    """``sweeper calibrate``: measure the ceilings of ``--device``'s GPU (``run``'s option,
    default ``cuda``), or show the cached ones unless ``--force``; a device with no
    ceilings (the interpreter, a replay) is refused, and without a CUDA GPU it fails with
    NoDeviceError, as the CPU has no ceilings to calibrate."""
    from sweeper import ceilings
    from sweeper.devices import device_class, open_device
    from sweeper.errors import NoDeviceError
    from sweeper.space import format_size

    cls = device_class(args.device)
    if not cls.has_ceilings:
        raise SweeperError(f"--device {args.device}: calibrate measures a GPU's ceilings, "
                           f"and the {cls.name} device has none; allowed: a device that "
                           "measures a GPU (--device cuda, the default)")
    try:
        device = open_device(args.device)
    except NoDeviceError:
        raise NoDeviceError("calibrate needs a CUDA GPU and none was found: there is "
                            "nothing to calibrate on the CPU") from None
    env = device.environment()
    found = ceilings.load(env["gpu"], env.get("gpu_uuid", ""), env.get("driver", ""))
    if found is None or args.force:
        found = ceilings.measure(device, progress=lambda line: print(line, flush=True))
        print(f"saved to {ceilings.save(found)}")
    else:
        print(f"cached: {ceilings.cache_path(found.gpu, found.uuid, found.driver)} "
              f"(measured {found.measured}; --force to measure again)")
    print(f"{found.gpu} (driver {found.driver}): launch floor {found.launch_floor_us:.1f} us")
    print(f"{'footprint':>10} {'cold GB/s':>10} {'warm GB/s':>10}   (torch copy_, read + write)")
    for fp, row in sorted(found.copy.items()):
        print(f"{format_size(fp):>10} {row['cold']:10.0f} {row['warm']:10.0f}")
    for dtype, tflops in found.matmul.items():
        print(f"matmul {dtype:9} {tflops:8.1f} TFLOP/s (torch.matmul, 8192³, random data)")
    return 0
