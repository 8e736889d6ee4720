"""``sweeper.run``: a sweep from Python, returning the :class:`Study`.

It builds the engine's :class:`~sweeper.engine.RunOptions` from its arguments and calls
:func:`~sweeper.engine.run_sweep`, as ``sweeper run`` does, so a sweep from a notebook
and one from a shell check, measure, record and report alike.  A bad input raises the
:class:`~sweeper.errors.SpaceError` or :class:`~sweeper.errors.SweeperError` whose one
line the command prints (``<string>:3: params.BLOCK[0]: 300 is not a power of two``),
never ``SystemExit``, with the traceback of the call alone (:mod:`sweeper.core._api_errors`;
``debug=True`` keeps sweeper's frames), and nothing is written."""

from __future__ import annotations

import contextlib
import json
import os
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from sweeper._environ import environ_kept, optuna_verbosity_kept
from sweeper.api._checks import flag, folder, home, optional_text, paths, plain, refuse
from sweeper.api._study import Study
from sweeper.core._api_errors import cutting
from sweeper.core._spelling import entry
from sweeper.core._units import whole
from sweeper.engine import DICT, STRING, RunOptions, SpaceSource, run_sweep
from sweeper.errors import DEBUG_ENV, SpaceError, SweeperError
from sweeper.escape import cut
from sweeper.interrupt import Aborted, Terminated
from sweeper.options import (
    GPU_CHECK_TARGET,
    GPU_CHECKS,
    OptionValueError,
    gpu_list,
    gpu_target,
    seconds,
    trials_within,
)
from sweeper.options import compile_workers as compile_workers_option
from sweeper.space import Override
from sweeper.store._schema import show

#: The start of tqdm's warning where a notebook lacks ipywidgets (a regular expression).
TQDM_NOTICE = "IProgress not found"


#: a second Ctrl-C's KeyboardInterrupt is the call's own message, cut at the call as its
#: errors are
@cutting(SweeperError, KeyboardInterrupt)
@entry(needs={"space": "the space: a space file's path, YAML text or a dict"})
def run(space: str | Path | Mapping[str, Any], *, device: str = "cuda",
        studies_dir: str | Path = "studies", study: str | None = None,
        trials: int | None = None, time: float | str | None = None,
        params: Mapping[str, Any] | Sequence[str] = (), force: bool = False,
        quiet: bool = False, report: bool = True, priors: bool = True,
        allow_path: str | Path | Sequence[str | Path] = (),
        gpus: str | Sequence[int] | None = None,
        storage: str | None = None, gpu_check: str = "first",
        gpu_check_target: str = GPU_CHECK_TARGET, workers: str | None = None,
        compile_workers: int | str | None = None, svg: bool = False,
        timing: bool = False, debug: bool = False) -> Study:
    """Sweep ``space`` as ``sweeper run`` does and return its :class:`Study`.

    ``space``: a space file's path; YAML text (a string holding a newline or starting with
    ``{``), named ``<string>`` in errors; or a dict, named ``<dict>`` (its errors give the
    key path, as it has no lines).  Any other string is a path: one that names no file
    but reads as YAML (``"kernel: copy"``) is refused saying so and how to give text.
    ``extends:`` in text or a dict reads from the current folder.  Without ``study:`` (or
    ``study=``) text or a dict is named after its kernel (``add`` for ``kernel:
    mymodule:add``, then ``-interpret`` and the like off a GPU), as
    ``--from-autotune`` names it, and a file after the file.  The options are ``run``'s:
    ``device`` (``cuda``, ``interpret``,
    ``replay:TABLE.csv``), ``studies_dir``, ``study`` (``--study``), ``trials``, ``time``
    (seconds, or ``"90s"``, ``"1h30m"``), ``params`` (``-p``: ``{"BLOCK": [1024, 2048]}`` or
    ``["BLOCK=1024,2048"]``), ``force``, ``quiet`` (nothing printed but errors: no
    header, progress bar, summary, report or time line),
    ``report=False`` (``--no-report``), ``priors=False`` (``--no-priors``), ``gpus``
    (``--gpus``: ``"0,1"``, ``[0, 1]`` or ``"all"``), ``storage`` (``--storage URL``:
    the study is kept in that database, and the returned :class:`Study` reads it from
    there), ``gpu_check`` (``--gpu-check``: on the interpreter, ``first``, ``all`` or
    ``off``), ``gpu_check_target`` (``--gpu-check-target``: ``"sm_90"``), ``workers``
    (``--workers``: ``"process"`` or ``"inline"``), ``compile_workers``
    (``--compile-workers``: a count, or ``"auto"``), ``svg`` (``--svg``), ``timing``
    (``--timing``), ``debug`` (``sweeper --debug``: each failed trial's traceback on
    standard error as it fails, a worker process's too, where a study records only its
    reason; and a sweeper error raised with its whole traceback, sweeper's frames
    included, not cut at this call) and ``allow_path`` (a folder or a list of them).  A
    value of a type the command could not have been given (``device=None``,
    ``force="no"``) is refused like a bad value, with a
    :class:`~sweeper.errors.SweeperError`; every error names the keywords, never the
    command's flags (``study``, ``force=True``:
    :mod:`sweeper.core._spelling`).  A run whose trials all failed still returns its
    study (what failed is in :meth:`Study.trials_dataframe`); Ctrl-C (a notebook's
    interrupt) stops after the trial in flight and returns the study as it stands; a
    second aborts the call with a :class:`KeyboardInterrupt` whose traceback is the
    caller's and the call's one frame (:func:`~sweeper.core._api_errors.cutting`), none of
    the sweep's the signal landed in, naming the study that keeps every finished trial
    (the same call resumes it) (:func:`aborted_line`).  The
    variables a device sets for its run (the interpreter's ``TRITON_INTERPRET=1``) are put
    back as they were when it returns, so the caller's later kernels are not interpreted,
    and so is Optuna's verbosity, which the sweep lowers for its own studies, so the
    caller's Optuna studies log as before."""
    device = _device(device)
    source = _source(space, params, allow_path)
    tracebacks = {DEBUG_ENV: "1"} if flag("debug", debug) else {}
    options = RunOptions(
        space=source, device=device, study=study,
        studies_dir=folder("studies_dir", studies_dir),
        storage=optional_text("storage", storage, "a storage; allowed: a postgresql:// URL, "
                              "or None for the journal under studies_dir"),
        trials=_trials(trials), time_s=_seconds(time), force=flag("force", force),
        gpus=_gpus(gpus), quiet=flag("quiet", quiet), silent=quiet,
        report=flag("report", report), gpu_check=_one_of("gpu_check", gpu_check, GPU_CHECKS),
        gpu_check_target=_option("gpu_check_target", gpu_target, gpu_check_target),
        workers=_one_of("workers", workers, ("process", "inline", None)),
        compile_workers=None if compile_workers is None else _option(
            "compile_workers", compile_workers_option, compile_workers),
        svg=flag("svg", svg), timing=flag("timing", timing),
        priors=flag("priors", priors),
        # the space as the study's recorded command names it: a path quoted, text by its
        # pseudo file name
        command=f"sweeper.run({source.path if source.text else repr(source.path)}, "
                f"device={device!r})")
    try:
        with warnings.catch_warnings(), _environment_kept(device), \
                optuna_verbosity_kept(), environ_kept([DEBUG_ENV], **tracebacks):
            # Optuna imports tqdm.auto, which in a notebook without ipywidgets tells the
            # user to install them for tqdm's bars; sweeper draws none (its own bar needs
            # no ipywidgets), so that red notice would only mislead
            warnings.filterwarnings("ignore", message=TQDM_NOTICE)
            result = run_sweep(options)
    except SpaceError as err:
        if err.file != DICT:
            raise
        # a dict has no lines: the line of the YAML it was dumped to would mislead (the
        # parser drops them, but the YAML reader's nesting and size limits and an
        # extends: error give them)
        raise SpaceError(err.message, file=DICT, path=err.path) from None
    except Aborted as err:
        # raised here, its cause left out: the caller's traceback is its own line, this
        # call and what to do, not the sweep's frames the signal happened to land in
        raise KeyboardInterrupt(aborted_line(err)) from None
    return Study(result.store)


def aborted_line(err: Aborted) -> str:
    """What an aborted :func:`run` says: which signal, where the study keeps every
    finished trial and how to resume it."""
    by = "SIGTERM" if isinstance(err, Terminated) else "Ctrl-C"
    if err.location is None:
        return f"sweeper.run: aborted by {by} before its study was opened; nothing was written"
    return (f"sweeper.run: study {err.study} aborted by {by}; every finished trial is kept "
            f"in {err.location}: call sweeper.run again with the same arguments to resume it")


def _environment_kept(device: str) -> contextlib.AbstractContextManager[None]:
    """The environment variables ``device`` sets for a run (:attr:`Device.sets_env`) as
    they were before it, once it ends; a device that cannot be named sets nothing (the
    run refuses it)."""
    from sweeper.devices import device_class

    try:
        return environ_kept(device_class(device).sets_env)
    except SweeperError:
        return contextlib.nullcontext()


def _option(name: str, check: Any, value: Any) -> Any:
    """``value`` as the command's option ``check`` takes its text: a whole number or text
    only (``True`` is no count), refused in one line naming the keyword."""
    if value is None or isinstance(value, bool) or not isinstance(value, (int, str)):
        raise refuse(name, value, "a whole number or text, as the command takes it")
    return _checked(name, check, str(value))


def _checked(name: str, check: Callable[..., Any], *args: Any) -> Any:
    """``check(*args)`` (a :mod:`sweeper.options` parser), its one-line error said as
    keyword ``name``'s."""
    try:
        return check(*args)
    except OptionValueError as err:
        raise SweeperError(f"{name}: {err}") from None


def _one_of(name: str, value: Any, allowed: Sequence[str | None]) -> Any:
    """``value`` where it is one of ``allowed``, as the command's option of that name
    takes it (``workers``: ``process``, ``inline`` or None, the default: processes on a
    GPU, inline elsewhere; ``gpu_check``: one of ``--gpu-check``'s)."""
    if not isinstance(value, (str, type(None))) or value not in allowed:
        shown = [repr(a) for a in allowed]
        raise refuse(name, value, f"{', '.join(shown[:-1])} or {shown[-1]}")
    return value


def _device(device: Any) -> str:
    """``device`` as ``--device`` takes it: a device's name, as text (which names a device
    is the engine's to check, as it is for the command)."""
    if not isinstance(device, str):
        from sweeper.plugins import DEVICE, known

        raise refuse("device", device, f"a device name; allowed: text, one of {known(DEVICE)}")
    return device


def _gpus(gpus: str | Sequence[int] | None) -> tuple[int, ...] | None:
    """``gpus`` as the engine takes it: ``()`` (not given) the one GPU the device opens.
    A list of indices is ``--gpus``' text joined, checked by the same parser."""
    allowed = "GPU indices; allowed: 'all', '0,1' or [0, 1], each index once"
    if gpus is None:
        return ()
    if isinstance(gpus, str):
        text = gpus
    elif isinstance(gpus, Sequence) and all(whole(i) is not None for i in gpus):
        text = ",".join(str(whole(i)) for i in gpus)
    else:
        raise refuse("gpus", gpus, allowed)
    try:
        listed = gpu_list(text)
    except OptionValueError as err:
        raise (SweeperError(f"gpus: {err}") if text is gpus else refuse("gpus", gpus, allowed)
               ) from None
    return None if listed is None else tuple(listed)


def _source(space: Any, params: Mapping[str, Any] | Sequence[str],
            allow_path: str | Path | Sequence[str | Path]) -> SpaceSource:
    """The space as the engine reads it: a path, or text under a pseudo file name."""
    overrides = tuple(_params(params))
    allowed = paths("allow_path", allow_path)
    if isinstance(space, str) and ("\n" in space or space.lstrip().startswith("{")):
        path, text = STRING, space
    elif isinstance(space, (str, Path)):
        path, text = home(space), None
        if isinstance(space, str):
            _no_text_as_path(space, path)
    elif isinstance(space, Mapping):
        _kernel_named(space.get("kernel"))
        path, text = DICT, _yaml(space)
    else:
        raise SweeperError(f"space: {type(space).__name__} is not a space; allowed: a path, "
                           "YAML text or a dict")
    return SpaceSource(path=path, text=text, params=overrides, allow_path=allowed)


def _no_text_as_path(space: str, path: str) -> None:
    """Refuse a one-line string that names no file but reads as YAML text
    (``"kernel: copy"``), saying that it was read as a path and how to give text: a
    one-line string is a path (the common case, and what the command takes), so such a
    string otherwise failed with the file's "No such file or directory" alone."""
    if os.path.exists(path) or not _reads_as_mapping(space):
        return
    shown = space if len(space) <= 40 else "kernel: copy"      # a long one: its form
    raise SpaceError(f"no such space file in {os.getcwd()}: a string without a newline is "
                     "read as a space file's path; allowed for YAML text: a newline in it "
                     f"({shown + chr(10)!r}) or braces round it ({'{' + shown + '}'!r}), "
                     "or a dict", file=cut(repr(space), 80))


def _reads_as_mapping(text: str) -> bool:
    """Whether ``text`` is YAML's ``key: value`` mapping (``kernel: copy``), or would be
    but for an error later in it (``kernel: copy, params: {}``); a path reads as one
    string (``spaces/copy.yaml``, ``C:/spaces/copy.yaml``)."""
    import yaml

    try:
        return isinstance(yaml.safe_load(text), dict)
    except yaml.YAMLError:
        return ": " in text


def _kernel_named(kernel: Any) -> None:
    """Refuse a dict's ``kernel`` given as the kernel itself (the class
    :func:`sweeper.kernel` made, a function), which a space names, saying its name: a
    study records the name, and its workers import the kernel by it."""
    if callable(kernel):
        name = getattr(kernel, "name", None) or getattr(kernel, "__name__", "NAME")
        module = getattr(kernel, "__module__", None) or "module"
        raise SpaceError(f"the kernel itself, not its name; allowed: a built-in's name or "
                         f"'module:attr' (here '{module}:{name}')"[:400], file=DICT,
                         path="kernel")


def _yaml(space: Mapping[str, Any]) -> str:
    """A dict as the YAML text the study records (and parses, as a file's)."""
    import yaml

    try:
        return str(yaml.safe_dump(plain(dict(space)), sort_keys=False))
    except yaml.YAMLError as err:
        raise SpaceError(f"not YAML data ({str(err).splitlines()[0]}); allowed: dicts, "
                         "lists, strings, numbers and booleans", file=DICT) from None


def _params(params: Mapping[str, Any] | Sequence[str]) -> list[str | Override]:
    """The overrides: ``{"BLOCK": [1024, 2048]}``'s entries, each named in messages as
    the dict wrote it (``params={'BLOCK': [1024, 2048]}``); a ``KEY=VALUES`` text or a
    list of them as they are (``-p``'s, named ``params='BLOCK=1024,2048'``)."""
    if isinstance(params, str):
        return [params]
    if isinstance(params, Mapping):
        return [_override(k, plain(v)) for k, v in params.items()]
    if not (isinstance(params, Sequence) and all(isinstance(p, str) for p in params)):
        raise refuse("params", params, "parameter overrides; allowed: a dict such as "
                     "{'BLOCK': [1024, 2048]}, or 'KEY=VALUES' texts such as "
                     "['BLOCK=1024,2048']")
    return list(params)


def _override(key: Any, values: Any) -> Override:
    """One dict entry's values as ``-p`` reads them (a YAML list; numpy's numbers and
    arrays, a ``range``, as the Python values they hold, already), named as written.
    Written as YAML, which the values are read as, not JSON: a float comes back the
    float it was (``1e20``, ``inf``, ``nan``, which JSON's ``1e+20``, ``Infinity`` and
    ``NaN`` would turn into text for YAML), and is refused as the space's own is;
    what JSON cannot hold (a set, an object) is refused here."""
    import yaml

    listed = values if isinstance(values, list) else [values]
    try:
        json.dumps(listed)           # JSON's kinds of value only (no set, no object)
        text = yaml.safe_dump(listed, default_flow_style=True, allow_unicode=True,
                              width=2**31)
    except (TypeError, ValueError, yaml.YAMLError):
        raise refuse(f"params[{key!r}]", values, "values of a space; allowed: numbers, "
                     "text, booleans, or a list of them") from None
    return Override(str(key), text, f"params={cut(repr({key: values}), 60)}")


def _trials(trials: int | None) -> int | None:
    """``trials`` as an ``int`` (numpy's integers too), by ``--trials``' own bounds and
    quoted as given (``10**10``, not the command's text ``'10000000000'``); ``None`` is no
    limit."""
    return None if trials is None else _checked("trials", trials_within, whole(trials),
                                                show(trials))


def _seconds(time: float | str | None) -> float | None:
    """``time`` in seconds: a number, or a duration such as ``"90s"``, ``"10m"`` or ``"1h30m"``; by
    ``--time``'s parser, so within the same bounds (at most 1000 h: beyond it no timer
    can be armed), and quoted as given (``-1``, not the command's text ``'-1'``)."""
    return None if time is None else _checked("time", seconds, time, show(time))

