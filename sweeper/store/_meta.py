"""A study's metadata (``study.json``, or the PostgreSQL study row) as one typed record.

:class:`StudyMeta`'s field annotations are the schema a study file is checked against
when it is read (:func:`meta_problem`), as a journal record's are; readers get the typed
object (:meth:`~sweeper.store.Storage.study_meta`) and never guess at a missing key: a
field a study file leaves out reads as its default, and what older sweepers wrote is read
as the current format first (:func:`~sweeper.store._upgrade.upgraded_meta`).  Writers
(creating a study, a resume's edit, a copy) keep working on the JSON object, so keys this
sweeper does not know are kept as they are.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sweeper.core._model import GRID_EXTENTS
from sweeper.errors import StudyError, SweeperError
from sweeper.kernels import Headline
from sweeper.space._yaml import load_with_lines
from sweeper.store._schema import FORMAT, Invalid, decode, fields_invalid, format_problem, json_type
from sweeper.store._upgrade import upgraded_meta


@dataclass(frozen=True)
class RunBudget:
    """The budgets one run of a study was given, as it applied them (``--trials`` and
    ``--time`` where given, else the space file's ``budget:``; ``None``: no such limit),
    and when it started."""

    when: str
    trials: int | None = None
    time_s: float | None = None
    #: the fraction of the calibrated ceiling that ends the search
    target: float | None = None
    #: measured trials without an improvement beyond noise that end the search
    patience: int | None = None


@dataclass(frozen=True)
class RecordedEnvironment:
    """The entries of a study's ``environment`` (what its device's
    :meth:`~sweeper.devices.Device.environment` gave) that reports and exports read."""

    device: str = ""
    opened_as: str = ""
    gpu: str = ""
    sms: int | None = None
    l2_bytes: int | None = None
    #: the interpreter's cap on footprints (its problems were shrunk to it)
    max_footprint: int | None = None
    host: str = ""
    driver: str = ""
    gpu_uuid: str = ""
    capability: str = ""
    #: the environment variables that change what is measured, by name
    env: dict[str, str] = field(default_factory=dict)
    #: a replay's: its table's path, and the header of the study it recorded
    replay_table: str = ""
    recorded: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class KeptBound:
    """One of the GPU's physical bounds as ``study.json``'s ``bounds`` keeps it
    (:meth:`~sweeper.bounds.Bounds.to_json`)."""

    per_s: float
    how: str
    source: str


@dataclass(frozen=True)
class KeptBounds:
    """The GPU's physical bounds as ``study.json`` keeps them, each read back by
    :meth:`~sweeper.bounds.Bounds.from_json`."""

    gpu: str
    l2_bytes: int = 0
    dram: KeptBound | None = None
    sm_path: KeptBound | None = None
    flops: dict[str, KeptBound] = field(default_factory=dict)
    absent: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class KeptBusy:
    """How busy the last run kept its GPUs, as :meth:`~sweeper.busy.Busy.to_json` keeps
    it and the report words it again."""

    label: str = "gpu"
    gpus: int = 1
    share: float = 0.0
    trials_share: float = 0.0
    wall_s: float = 0.0
    timed_s: float = 0.0
    warmup_s: float = 0.0
    finals_s: float = 0.0
    finals_wall_s: float = 0.0
    parts: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class KeptDrop:
    """A GPU the last run dropped: the line the report shows of it."""

    line: str


@dataclass(frozen=True)
class KeptLastRun:
    """The entries of ``study.json``'s ``last_run`` that the report and ``plan`` read."""

    stopped_by: str = ""
    measured: int = 0
    wall_s: float | None = None
    sweep_s: float | None = None
    command: str = ""
    dropped: list[KeptDrop] = field(default_factory=list)
    timing: list[str] = field(default_factory=list)
    gpu_busy: KeptBusy | None = None


@dataclass(frozen=True)
class KeptSampler:
    """A sampler as ``study.json`` keeps it (:func:`sweeper.study.sampler_json`)."""

    name: str = ""
    seed: int = 0
    #: one-at-a-time's baseline config: (axis, label) pairs
    baseline: list[tuple[str, str]] = field(default_factory=list)


@dataclass(frozen=True)
class KeptEntries:
    """The shapes inside ``study.json``'s objects that its readers use, checked when the
    file is read (:func:`meta_problem`) besides :class:`StudyMeta`'s own fields: a study
    file edited by hand into another type there is refused with its file and what is
    allowed, not met as a traceback in the report or export that reads it.  The
    :class:`StudyMeta` fields stay the objects as recorded, so their entries not named
    here (a device plugin's own environment) are kept as they are, unchecked."""

    #: checked as the current format has it (an older file's is filled in first)
    headline: Headline = Headline.GBPS
    environment: RecordedEnvironment = field(default_factory=RecordedEnvironment)
    bounds: KeptBounds | None = None
    sampler: KeptSampler = field(default_factory=KeptSampler)
    samplers: list[KeptSampler] = field(default_factory=list)
    last_run: KeptLastRun = field(default_factory=KeptLastRun)


@dataclass(frozen=True)
class StudyMeta:
    """What a study recorded about itself: its name and kernel, the command it was
    created with, the space file of its latest run and how that measured (``measure``, as
    the device resolved it, and ``measure_text``), its kernel's footprint rule and
    autotuner's key as that run had them, the sampler, the device's environment
    and the latest run's fingerprint, the GPU's bounds and ceilings, the space's axes
    (widened by each resume) and which of them are meta-parameters, when it was resumed
    (and with ``--force``), the budgets each run was given and how its last run went."""

    study: str
    kernel: str
    #: the name the study file recorded where the study is held under another (its folder
    #: copied or renamed, ``cp -r studies/a studies/b``): the study goes by the name it is
    #: held under (:func:`named`), this says where it came from; empty where they agree
    copied_from: str = ""
    format: int = FORMAT
    #: the kernel's name as its tuning entries key it (``kernel`` may be a file path)
    kernel_name: str = ""
    created: str = ""
    command: str = ""
    #: the space file as its command named it (relative to the folder that ran it); a
    #: resume of the same file from another folder keeps it (:func:`sweeper.study.space_file_kept`)
    space_path: str = ""
    #: the folder, absolute, its relative file names were read from
    #: (:attr:`~sweeper.core.Space.folder`, resolved; an older sweeper's may hold a ``..``,
    #: read as it is); empty in a study an older sweeper wrote, whose ``space_path`` is
    #: read from the working folder
    space_folder: str = ""
    space_text: str = ""
    space_sha256: str = ""
    #: the kernel's footprint over its dimensions and ``itemsize`` as the run had it (its
    #: ``footprint_bytes``), which an export keeps in each tuning entry without reading
    #: the kernel's files again (a ``cuda`` kernel's ``.cu`` file may be gone since);
    #: empty in a study an older sweeper wrote, whose export reads it from them
    footprint_rule: str = ""
    #: the ``key`` of the ``@triton.autotune`` the kernel is declared with
    #: (``autotuned=``) as the run imported it, which a triton export keys its module on
    #: without reading the kernel's source (where only running the module resolves the
    #: autotuned function, that source does not show it); ``None`` where the kernel has
    #: no autotuner, or in a study an older sweeper wrote, whose export reads it from source
    autotune_key: list[str] | None = None
    #: how a CUDA C kernel's configs compiled and launched as the run had it (its
    #: ``.cu`` file, entry, template, NVRTC options and shared memory:
    #: :meth:`~sweeper.kernels._cuda_build.CudaLaunch.recorded`), which a header export
    #: writes without importing the kernel's module; ``None`` for any other kernel, or in
    #: a study an older sweeper wrote
    cuda_launch: dict[str, Any] | None = None
    headline: str = "gbps"
    measure_text: str = ""
    device_note: str | None = None
    #: the sampler of its latest run (name, seed, baseline)
    sampler: dict[str, Any] = field(default_factory=dict)
    #: every sampler it ran with, first to last (a resume with ``--force`` may change it;
    #: each trial records its own); empty in a study an older sweeper wrote: ``sampler``
    samplers: list[dict[str, Any]] = field(default_factory=list)
    measure: dict[str, Any] = field(default_factory=dict)
    measure_requested: dict[str, Any] = field(default_factory=dict)
    environment: dict[str, Any] = field(default_factory=dict)
    fingerprint: dict[str, Any] = field(default_factory=dict)
    #: checked against the fingerprint's own copy (:func:`sweeper.study.fingerprint_damage`)
    kernel_source_hash: Any = None
    #: the files besides those its kernel's options name that the source it hashed read
    #: (a ``cuda`` kernel's included files, relative to its ``.cu`` file's folder:
    #: :meth:`~sweeper.kernels.Kernel.hashed_files`), recorded with that hash, so that
    #: one gone since is told from an edit (a header it never read is not gone); empty in
    #: a study an older sweeper wrote
    kernel_source_files: list[str] = field(default_factory=list)
    #: each kernel source hash an earlier sweeper recorded that a resume found to be the
    #: same files as this one hashes them (:func:`sweeper.study.source_respelled`), with
    #: this one's: a trial that names the one was measured on the other
    #: (:class:`~sweeper.winners.Sources`)
    respelled: dict[str, str] = field(default_factory=dict)
    bounds: dict[str, Any] | None = None
    ceilings: dict[str, Any] | None = None
    #: whether its problems get interleaved finals (:func:`sweeper.study.finals_wanted`)
    finals: bool = True
    axes: dict[str, list[Any]] = field(default_factory=dict)
    meta_axes: list[str] = field(default_factory=list)
    #: the zipped groups of its space: name -> ``members`` and their ``rows`` (empty in a
    #: study an older sweeper wrote)
    zipped: dict[str, dict[str, Any]] = field(default_factory=dict)
    resumed: list[str] = field(default_factory=list)
    #: each resume with ``--force`` that changed its fingerprint: ``when`` and what it
    #: ``changed`` (``key: old -> new``), and the ``environment`` it replaced where the
    #: run's differed; the fingerprint, environment, the space's text and hash are the
    #: latest run's, so an unchanged rerun resumes without ``--force``
    forced: list[dict[str, Any]] = field(default_factory=list)
    #: each run's budgets, first to last (the one that created it, then each resume and
    #: each worker that joined it); empty in a study an older sweeper wrote, whose
    #: ``command`` alone names a budget given on the command line
    budgets: list[RunBudget] = field(default_factory=list)
    #: how its last run went: why it stopped (``stopped_by``), the command's seconds
    #: (``wall_s``, its report included, from the process's start for a command) and the
    #: sweep's (``sweep_s``), the trials it measured, its command, priors, dropped GPUs
    #: and how busy it kept them
    last_run: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, meta: Mapping[str, Any]) -> StudyMeta:
        """The typed metadata of a checked study file (:func:`meta_problem` passed it);
        keys it has no field for are left."""
        out: StudyMeta = decode(cls, meta)
        return out

    @property
    def gpu(self) -> str:
        """The GPU it measured, as its environment names it (``?`` where it names none)."""
        return str(self.environment.get("gpu", "?"))

    @property
    def tuned_name(self) -> str:
        """The kernel as tuning files and exported modules name it."""
        return self.kernel_name or self.kernel

    @property
    def param_axes(self) -> list[str]:
        """The axes a config's parameters are beside its grid and block, as reports and
        tables show them: its grid beyond x where the space gives it (``grid_y``,
        ``grid_z``: a CUDA C launch's), then the meta-parameters."""
        extents = [a for a in GRID_EXTENTS if a in self.axes and a not in self.meta_axes]
        return [*extents, *self.meta_axes]


def named(meta: dict[str, Any], name: str) -> dict[str, Any]:
    """``meta`` (a checked study file) of the study held under ``name`` (its folder's, or
    its name in a database): where it records another ``study``, its folder was copied or
    renamed, and it is the study ``name`` (what ``--study`` and a report's reproduce
    command must give), ``copied_from`` the name it recorded.  A new object where they
    differ; ``meta`` itself where they agree, or where ``name`` is empty."""
    recorded = meta.get("study")
    if not name or recorded == name:
        return meta
    return {**meta, "study": name, "copied_from": recorded}


#: The fields a study file must hold (those of :class:`StudyMeta` without a default).
META_REQUIRED = tuple(f.name for f in dataclasses.fields(StudyMeta)
                      if f.default is dataclasses.MISSING
                      and f.default_factory is dataclasses.MISSING)


def meta_problem(meta: Any) -> Invalid | None:
    """Why ``meta`` (a parsed study.json) is not one sweeper can use, with the keys of the
    entry it names where there is one (:attr:`~sweeper.store._schema.Invalid.keys`), or
    ``None``."""
    if not isinstance(meta, dict):
        return Invalid(f"a JSON {json_type(meta)}, not an object")
    problem = format_problem(meta, "study files")
    if problem is not None:
        return Invalid(problem, ("format",))
    missing = [k for k in META_REQUIRED if k not in meta]
    if missing:
        return Invalid(f"no {', '.join(missing)}; a study.json needs "
                       f"{', '.join(META_REQUIRED)}")
    # the entries as the current format has them: a copy upgraded, the file's left as read
    return fields_invalid(StudyMeta, meta) or fields_invalid(KeptEntries,
                                                             upgraded_meta(dict(meta)))


def checked_meta(meta: Any, where: Any, advice: str = "", text: bytes | None = None
                 ) -> dict[str, Any]:
    """``meta`` (a parsed study file) as the current format (:func:`upgraded_meta`); one
    that is not one sweeper can use (:func:`meta_problem`) is a StudyError naming
    ``where``, with ``advice`` after the reason, and the line of the entry it names
    where ``text``, the file as read, shows one (:func:`key_line`)."""
    problem = meta_problem(meta)
    if problem:
        line = None if text is None else key_line(text, problem.keys)
        raise StudyError(f"{where}{'' if line is None else f':{line}'}: {problem}{advice}")
    return upgraded_meta(meta)


def key_line(text: bytes, keys: tuple[str | int, ...]) -> int | None:
    """The line of the entry ``keys`` names in JSON ``text`` (its key's line, a list
    item's own), else of the nearest entry holding it that the text has (an entry an
    upgrade of an older file filled in is none of the file's); ``None`` for the whole
    file, or where the text is none the space files' YAML reader reads with its lines
    (:func:`~sweeper.space._yaml.load_with_lines`: a JSON object is a YAML flow mapping).
    Asked only of a file being refused, so a good file is never read twice."""
    try:
        _, lines = load_with_lines(text.decode("utf-8"), "study.json")
    except (SweeperError, UnicodeDecodeError, RecursionError):
        return None
    for end in range(len(keys), 0, -1):
        path = ""
        for key in keys[:end]:
            path = f"{path}[{key}]" if isinstance(key, int) else \
                f"{path}.{key}" if path else key
        if path in lines:
            return lines[path]
    return None
