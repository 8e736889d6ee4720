"""A study's lifecycle around the sweep: what the space holds, and creating or resuming
the study on disk only when its fingerprint matches and some config can be launched."""

from __future__ import annotations

import dataclasses
import datetime as dt
import itertools
import re
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from sweeper.core._model import MAX_CONFIGS
from sweeper.core._spelling import given
from sweeper.core._units import counted
from sweeper.devices import Device, DeviceFacts, recorded_env
from sweeper.errors import SpaceError, StudyError, SweeperError
from sweeper.escape import cut
from sweeper.kernels import (
    Kernel,
    files_gone,
    looked_for,
    options_hashed,
    options_missing,
    put_back,
)
from sweeper.plugins import sampler_capabilities
from sweeper.space import AxisRole, Budget, Config, Configs, Invalid, Origin, Space
from sweeper.space._files import extended_file
from sweeper.store import FORMAT, JOURNAL, Storage, StudyMeta

MAX_ENUMERATED = MAX_CONFIGS       # the parser refuses larger spaces at the largest axis

Choice = dict[str, str]
_COMMENT = re.compile(r"(^|\s)#.*$")
_DETAILS = re.compile(r"\s*\([^)]*\)$| with [\w=, -]*$")

T = TypeVar("T")


def resolved(space: Space, facts: Mapping[str, int], max_footprint: int | None = None
             ) -> Iterator[tuple[Choice, Config | Invalid]]:
    """Every choice of the space, lazily, with its config or why it has none."""
    if space.size > MAX_ENUMERATED:     # a space built without the parser
        raise SpaceError(f"the space has {space.size} configs; at most {MAX_ENUMERATED}",
                         file=space.path)
    dims = space.choices()                 # zipped axes are one dimension
    for labels in itertools.product(*dims.values()):
        choice = dict(zip(dims, labels, strict=True))
        if space.ties:
            choice = space.expand(choice)
        try:
            yield choice, space.resolve(choice, facts, max_footprint)
        except Invalid as err:
            yield choice, err


def enumerate_choices(space: Space, facts: Mapping[str, int], max_footprint: int | None = None
                      ) -> tuple[list[Choice], list[tuple[Choice, str]]]:
    """Every choice of the space, split into valid ones and ruled-out ones with the reason
    (as lists; :class:`~sweeper.space.Configs` keeps them lazily)."""
    configs = Configs(space, facts, max_footprint)
    return (list(configs.expanded_all),
            [(choice, str(why)) for choice, why in configs.ruled_out()])


def reason_kind(reason: str) -> str:
    """A ruled-out config's reason without its values: configs ruled out alike share it."""
    return _DETAILS.sub("", reason)


class RuledOut:
    """Configs ruled out, counted by reason and by the place in the file that gave it."""

    def __init__(self) -> None:
        self.by_place: Counter[tuple[Origin, str]] = Counter()
        self.example: dict[tuple[Origin, str], str] = {}

    def add(self, invalid: Invalid) -> None:
        """Count ``invalid`` under its place in the file and its reason without values; the
        first such message is kept as the example."""
        key = (invalid.origin, reason_kind(str(invalid)))
        self.by_place[key] += 1
        self.example.setdefault(key, str(invalid))

    def by_reason(self) -> Counter[str]:
        """Counts by reason alone, whatever place in the file gave it."""
        out: Counter[str] = Counter()
        for (_, reason), count in self.by_place.items():
            out[reason] += count
        return out

    def nothing_left(self, total: int) -> SpaceError:
        """The error for a space none of whose ``total`` configs can be launched: the reason
        most of them gave, at the line of the value or constraint that gave it."""
        (origin, reason), count = self.by_place.most_common(1)[0]
        others = len(self.by_place) - 1
        more = f"; {others} other reason(s), listed by `sweeper plan`" if others else ""
        return SpaceError(f"no config can be launched: all {total} are ruled out, {count} by "
                          f"{self.example[(origin, reason)]}{more}", file=origin.file,
                          line=origin.line, path=origin.path)


def require_launchable(space: Space, facts: Mapping[str, int],
                       max_footprint: int | None = None) -> None:
    """Raise :class:`SpaceError` unless some config of ``space`` can be launched with these
    facts; stops at the first one that can, so a usual space costs one resolve."""
    ruled_out = RuledOut()
    for _, outcome in resolved(space, facts, max_footprint):
        if not isinstance(outcome, Invalid):
            return
        ruled_out.add(outcome)
    raise ruled_out.nothing_left(space.size)


#: Entries of a device's environment a study's fingerprint holds (those it records):
#: ``replay_table_sha256``, the hash of the contents of the table a replay serves (its
#: path, ``replay_table``, is what messages name: :func:`recorded_fingerprint`).
FINGERPRINT_ENV = ("gpu_uuid", "driver", "cuda", "torch", "triton", "sweeper",
                   "replay_table_sha256")
#: The fingerprint's entry for a replay's table, and the environment's for its path.
_TABLE, _TABLE_PATH = "replay_table_sha256", "replay_table"


def study_name(space: Space, device: Device) -> str:
    """The study a space runs into on ``device`` (unless ``--study`` names another): the
    space's own name where the device measures a GPU, else with the device's name after
    it, so an interpreter's or a replay's numbers never join a GPU's study."""
    return space.study if device.measures_gpu else f"{space.study}-{device.name}"


def finals_wanted(space: Space, device: Device) -> bool:
    """Whether the study's problems get interleaved finals: not on a device that replays
    (nothing can be measured again), nor for a sampler that declares it needs none
    (one at a time answers another question).  Recorded in study.json as ``finals``, so
    reports and exports of the study need neither plugin."""
    return not device.replays and sampler_capabilities(space.sampler.name).needs_finals


def fingerprint(space: Space, kernel: Kernel, device: Device,
                environment: Mapping[str, Any] | None = None) -> dict[str, str]:
    """What must match for a study to be resumed: measurements are only comparable then."""
    env = environment if environment is not None else device.environment()
    out = {"device": device.name, "gpu": device.facts().name, "kernel": space.kernel,
           "kernel_source": kernel.source_hash(), "space_content": space.content_sha256}
    out.update({k: str(env[k]) for k in FINGERPRINT_ENV if k in env})
    out["env"] = _env_text(env.get("env", {}))
    return out


def planned_fingerprint(space: Space, device: Device) -> dict[str, str]:
    """The entries of :func:`fingerprint` that ``plan`` tells without importing torch,
    triton or the kernel: the device, its GPU (unless plan assumed one), the kernel's
    name, the space's content, sweeper's version, the environment variables, the
    device's :meth:`~sweeper.devices.Device.planned_environment` (a replay's table), and
    the kernel's source where it is told running nothing (:func:`source_hash_unrun`: a
    ``@sweeper.kernel`` function's from its module's text, a ``cuda`` kernel's from its
    files).  The run compares the libraries' versions too, and
    every kernel's source."""
    from sweeper._version import __version__
    from sweeper.kernels import source_hash_unrun

    out = {"device": device.name, "kernel": space.kernel,
           "space_content": space.content_sha256, "sweeper": __version__,
           "env": _env_text(recorded_env())}
    source = source_hash_unrun(space.kernel, space.kernel_options)
    if source is not None:
        out["kernel_source"] = source
    out.update({k: v for k, v in device.planned_environment().items()
                if k in FINGERPRINT_ENV})
    if not device.assumed:
        out["gpu"] = device.facts().name
    return out


def _env_text(env: Mapping[str, Any]) -> str:
    """The environment variables as a fingerprint holds them: ``K=V`` by name."""
    return " ".join(f"{k}={v}" for k, v in sorted(env.items()))


def fingerprint_diff(have: Mapping[str, str], want: Mapping[str, str]) -> list[str]:
    """``key: old -> new`` for every fingerprint entry that differs."""
    return [f"{k}: {have.get(k)!r} -> {want.get(k)!r}" for k in sorted(set(have) | set(want))
            if have.get(k) != want.get(k)]


#: Fingerprint entries that are hashes (by their length in hex digits), and the name of
#: the copy study.json keeps at its top where it keeps one.  ``space_sha256`` (the hash of
#: the space's bytes) is an older sweeper's, read by :func:`recorded_fingerprint`.
_HASHES = {"kernel_source": (16, "kernel_source_hash"), "space_content": (64, None),
           "space_sha256": (64, "space_sha256"), _TABLE: (64, None)}


def recorded_fingerprint(meta: Mapping[str, Any], space: Space,
                         respelled: Respelled | None = None) -> dict[str, Any]:
    """The fingerprint ``meta`` (a study.json) records, as this sweeper writes one: the
    one place that reads an older study's.  An older sweeper hashed the space's bytes
    (``space_sha256``) where this one hashes what it says (``space_content``): such an
    entry reads as ``space``'s ``space_content`` where the bytes are the same, or where
    the space text recorded beside it says the same (its comments edited since); else as
    it is, a change.  A space whose recorded text says the same but for its ``budget:``
    (:data:`UNMEASURED_KEYS`) reads as ``space``'s too: a budget says when a search stops,
    not what a trial measures; so does one that differs in a kernel's ``check`` naming
    every output alone (:func:`_measured`).  An older sweeper's fingerprint of a replay held its
    table's path (``replay_table``), or none, its environment naming it: the table reads
    as the contents that path holds now (as the older sweeper compared it, the same path
    is the same table), and as none where it holds no table now (a change).  An older
    sweeper's hash of a ``cuda`` kernel's source, which named a ``file.py:function``
    reference, refuse or verify by its path, reads as the hash now where the files are the same
    (:func:`source_respelled`, asked of ``respelled`` where the caller has one for this
    space)."""
    have = dict(meta.get("fingerprint") or {})
    spelled = (respelled or Respelled(space))(meta)
    if spelled is not None:
        have["kernel_source"] = spelled[1]
    table = _recorded_table(meta)
    if have.pop(_TABLE_PATH, None) is not None or (_TABLE not in have and table and have):
        from sweeper.devices._replay import table_sha256

        now = table_sha256(table) if table else None
        if _TABLE not in have and now is not None:
            have[_TABLE] = now
    text = meta.get("space_text")
    if "space_content" not in have and "space_sha256" in have:
        old = have.pop("space_sha256")
        same = old == space.sha256 or (isinstance(text, str) and bool(space.content_sha256)
                                       and _content_of(text) == space.content_sha256)
        have["space_content"] = space.content_sha256 if same else old
    if "space_content" in have and have["space_content"] != space.content_sha256 and \
            isinstance(text, str) and bool(space.content_sha256):
        measured = _content_of(text, measured=True)
        if measured is not None and measured == _content_of(space.text, measured=True):
            have["space_content"] = space.content_sha256
    return have


def source_respelled(meta: Mapping[str, Any], space: Space) -> tuple[str, str] | None:
    """Where the kernel source hash ``meta`` (a study.json) records is the one an earlier
    sweeper gave ``space``'s kernel as its files read now (:func:`respelled_hash`, from the
    study's recorded space), that hash and the hash now: the same source, spelled
    otherwise, whose trials a resume keeps as measured on it (``respelled``:
    :class:`~sweeper.winners.Sources`).  ``None`` where it is not, or cannot be told: an
    edit of the files is a change still."""
    recorded = (meta.get("fingerprint") or {}).get("kernel_source")
    if not isinstance(recorded, str):
        return None
    now = respelled_hash(recorded, space.kernel, dict(space.kernel_options),
                         meta.get("space_text"), meta.get("space_path"),
                         meta.get("space_folder"))
    return None if now is None else (recorded, now)


class Respelled:
    """:func:`source_respelled` of one run's ``space``, worked out once for each recorded
    hash and space it is asked of (a study.json's): a resume asks it at each check of the
    fingerprint, before the study may be created and after, and for the hashes it
    records, and each answer hashes the kernel's files and reads the study's recorded
    space again (milliseconds for a ``cuda`` kernel).  Asked of a study.json another
    process has changed in between, it answers that one."""

    def __init__(self, space: Space) -> None:
        self.space = space
        self._known: dict[tuple[str | None, ...], tuple[str, str] | None] = {}

    def __call__(self, meta: Mapping[str, Any]) -> tuple[str, str] | None:
        asked = tuple(v if isinstance(v, str) else None for v in (
            (meta.get("fingerprint") or {}).get("kernel_source"), meta.get("space_text"),
            meta.get("space_path"), meta.get("space_folder")))
        if asked not in self._known:
            self._known[asked] = source_respelled(meta, self.space)
        return self._known[asked]


def respelled_hash(recorded: str, kernel: str, options: Mapping[str, str], text: object,
                   path: object, folder: object) -> str | None:
    """The hash this sweeper gives the source of built-in ``kernel`` built from
    ``options`` (as they read now), where ``recorded`` is the hash an earlier sweeper gave
    the same files, spelling its options as a study's recorded space (``text``, its file
    ``path``: its ``space_text`` and ``space_path``) resolved them from its recorded
    ``folder`` (``space_folder``: where that sweeper found them, the project moved since
    or not): a ``cuda`` kernel's ``file.py:function`` reference, refuse or verify by its
    path, now by its file's name (:func:`~sweeper.kernels.source_hash_respelled`).
    ``None`` where it is not, or cannot be told: an edit of the files is a change still."""
    from sweeper.kernels import source_hash_respelled
    from sweeper.space import recorded_kernel_options

    if not options or not isinstance(text, str):
        return None
    try:
        spelled = recorded_kernel_options(text, file=str(path or "<space>"),
                                          folder=folder if isinstance(folder, str) and folder
                                          else None)
    except SweeperError:
        return None
    return source_hash_respelled(kernel, options, recorded, dict(spelled))


def _recorded_table(meta: Mapping[str, Any]) -> str | None:
    """The path of the replay table the study in ``meta`` (a study.json) was last measured
    from, as it was given: its fingerprint's where an older sweeper kept it there, else
    its environment's; None where it names none."""
    for where in (meta.get("fingerprint"), meta.get("environment")):
        table = where.get(_TABLE_PATH) if isinstance(where, Mapping) else None
        if table is not None:
            return str(table)
    return None


def _table_change(have: Mapping[str, Any], old: str | None, new: str | None) -> str:
    """A change of the replay table's contents (``have``: the fingerprint recorded) as a
    refusal names it: by the tables' paths, ``old`` the study's and ``new`` this run's."""
    if have.get(_TABLE) is None and old is not None and new is not None:
        return (f"replay_table: {old!r} -> {new!r} (the study recorded its table's path "
                "alone, and it holds no table now)")
    if old is not None and new is not None and _same_path(old, new):
        return f"replay_table: {new!r} holds other contents than the study was measured from"
    return f"replay_table: {old!r} -> {new!r}" + (
        " (other contents)" if old is not None and new is not None else "")


def _same_path(a: str, b: str) -> bool:
    """Whether the paths ``a`` and ``b`` name the same file, from the folder this process
    runs in (``t.csv`` and its absolute path do)."""
    try:
        return a == b or Path(a).resolve() == Path(b).resolve()
    except (OSError, RuntimeError, ValueError):     # a loop of links, a NUL
        return False


#: The space file's top-level keys that say nothing of what a trial measures: a study
#: whose space changed in these alone is resumed as it is (:func:`recorded_fingerprint`).
UNMEASURED_KEYS = ("budget",)


def _content_of(text: str, measured: bool = False) -> str | None:
    """The hash of what a recorded space ``text`` says, the files it extends merged as
    they were (:func:`~sweeper.space._files.load_recorded`); ``measured``: of what it says
    of a trial (:func:`_measured`).  ``None`` where it is not YAML."""
    from sweeper.space._files import load_recorded
    from sweeper.space._yaml import content_sha256

    try:
        data = load_recorded(text, "study.json")[0]
    except SpaceError:
        return None
    return content_sha256(_measured(data) if measured else data)


def _measured(data: Any) -> Any:
    """A space's data (``data``) as it says what a trial measures: without
    :data:`UNMEASURED_KEYS`, and without a kernel's ``check`` that names every output in
    their order, which compares what no ``check`` compares (``check: [C]`` of a kernel
    whose one output is ``C``)."""
    if not isinstance(data, dict):
        return data
    data = {k: v for k, v in data.items() if k not in UNMEASURED_KEYS}
    kernel = data.get("kernel")
    if isinstance(kernel, dict) and "check" in kernel and \
            isinstance(kernel.get("outputs"), (dict, list)) and \
            kernel["check"] == list(kernel["outputs"]):
        data["kernel"] = {k: v for k, v in kernel.items() if k != "check"}
    return data


def fingerprint_damage(meta: Mapping[str, Any]) -> dict[str, str]:
    """How the fingerprint recorded in ``meta`` (a study.json) is damaged, by entry (``""``:
    the whole of it): absent, an entry that is not text, a hash of another form, or a
    hash that differs from its copy beside it.  Empty when it reads as sweeper wrote it:
    then a difference from this run's fingerprint is a change, not damage."""
    have = meta.get("fingerprint")
    if not have:
        return {"": "study.json records no fingerprint"}
    out: dict[str, str] = {}
    for key, value in sorted(have.items()):
        if not isinstance(value, str):
            out[key] = f"{key}: {value!r} is not text"
        elif key in _HASHES:
            digits, copy = _HASHES[key]
            beside = meta.get(copy) if copy is not None else None
            if not re.fullmatch(f"[0-9a-f]{{{digits}}}", value):
                out[key] = f"{key}: {value!r} is not a hash of {digits} hex digits"
            elif isinstance(beside, str) and beside != value:
                out[key] = (f"{key}: {value!r} differs from the {copy} {beside!r} recorded "
                            "beside it")
    return out


#: Lines of a space's text (with what it extends) past which a changed stretch is named
#: by its lines, not diffed line by line (the diff's time grows as their product).
DIFF_LINES = 2000


def text_changes(old: str, new: str, most: int = 3) -> list[str]:
    """``line N: 'old line' -> 'new line'`` for each stretch of a space's text that
    changed, placed in the file that holds it (``base.yaml line 6`` for a file the space
    extends), ``most`` at most, then how many more: what a refusal names where the space's
    hash alone would leave the user to find it.  Linear in the text but for the changed
    stretch, which is diffed line by line up to :data:`DIFF_LINES` lines."""
    import difflib

    a, b = old.splitlines(), new.splitlines()
    head = 0
    while head < min(len(a), len(b)) and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < min(len(a), len(b)) - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    ma, mb = a[head:len(a) - tail], b[head:len(b) - tail]
    if max(len(ma), len(mb)) > DIFF_LINES:
        stretches = [(0, len(ma), 0, len(mb))]
    else:
        stretches = [(i1, i2, j1, j2) for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(
            None, ma, mb, autojunk=False).get_opcodes() if tag != "equal"]
    # stretches that change comments or spacing alone say nothing of why a run is refused
    stretches = [st for st in stretches if _said(ma[st[0]:st[1]]) != _said(mb[st[2]:st[3]])
                 ] or stretches
    out: list[str] = []
    for i1, i2, j1, j2 in stretches[:most]:
        was = " / ".join(x.strip() for x in ma[i1:i2]) or "(none)"
        now_ = " / ".join(x.strip() for x in mb[j1:j2]) or "(none)"
        out.append(f"{_placed(b, head + j1)}: {cut(was, 80)!r} -> {cut(now_, 80)!r}")
    if len(stretches) > most:
        out.append(f"and {counted(len(stretches) - most, 'more change')}")
    return out


def key_changes(old: str, new: str, most: int = 3) -> list[str]:
    """``params.BLOCK: [256] -> [256, 512]`` for each value that changed in the YAML of a
    space given as a dict (:attr:`Space.keyed`), whose lines the caller never saw,
    ``most`` at most, then how many more; none where the dict's own YAML is unchanged or
    unreadable (then :func:`text_changes` places the change, in a file it extends)."""
    import yaml

    try:
        was, now_ = (yaml.safe_load(_own_text(text)) for text in (old, new))
    except yaml.YAMLError:
        return []
    found = list(_changed(was, now_, ""))
    out = [f"{path or 'the whole space'}: {a} -> {b}" for path, a, b in found[:most]]
    if len(found) > most:
        out.append(f"and {counted(len(found) - most, 'more change')}")
    return out


def _own_text(text: str) -> str:
    """A space's own YAML: its text before the first file it extends (marked)."""
    lines = text.splitlines()
    cut_at = next((i for i, line in enumerate(lines) if extended_file(line) is not None),
                  len(lines))
    return "\n".join(lines[:cut_at])


def _changed(was: Any, now_: Any, path: str) -> Iterator[tuple[str, str, str]]:
    """Each key path under which ``was`` and ``now_`` (parsed YAML) differ, with the
    value each holds there, shown in one line (``(none)`` where one lacks the key)."""
    if isinstance(was, dict) and isinstance(now_, dict):
        for key in dict.fromkeys([*was, *now_]):
            at = f"{path}.{key}" if path else str(key)
            if key not in was or key not in now_:
                yield at, _value(was.get(key, _NONE)), _value(now_.get(key, _NONE))
            else:
                yield from _changed(was[key], now_[key], at)
    elif was != now_:
        yield path, _value(was), _value(now_)


#: A key a dict does not hold, shown as ``(none)``.
_NONE = object()


def _value(value: Any) -> str:
    """A parsed YAML value in one line, at most 80 characters."""
    import json

    return "(none)" if value is _NONE else cut(json.dumps(value, default=str), 80)


def _said(lines: list[str]) -> list[str]:
    """``lines`` of YAML without their comments, blank lines and spacing (a ``#`` in a
    quoted value is taken for a comment too: a stretch so taken for comments alone is
    still named where no other changed)."""
    return [x for x in (" ".join(_COMMENT.sub("", line).split()) for line in lines) if x]


def _placed(lines: list[str], at: int) -> str:
    """Where line ``at`` (from 0) of a space's text is: ``line N`` of the space file, or
    ``FILE line N`` of a file it extends (the text marks where each starts)."""
    where, first = "", 0
    for i, line in enumerate(lines[:at]):
        file = extended_file(line)
        if file is not None:
            where, first = f"{file} ", i + 1
    return f"{where}line {at - first + 1}"


def resume_refused(root: Any, changed: list[str], meta: Mapping[str, Any], space_text: str,
                   new_configs: bool | None = None, *, keyed: bool = False,
                   gone: Sequence[str] = (), kernel: str | None = None) -> str:
    """Why a study whose fingerprint differs from this run's is not resumed, and the ways
    on: its old trials are not comparable with new ones, so mixing them must be asked for.
    What differs is named as it is: the recorded fingerprint damaged (``meta``'s, see
    :func:`fingerprint_damage`), the kernel's source changed, a file it was read from
    gone (``gone``: :func:`_source_gone`, so named, as an edit it is not: put back, the
    study resumes, put back where :func:`~sweeper.kernels.looked_for` says for
    ``kernel``, the space's: a user kernel's ``sweeper.cuda`` files where its module
    names them; where the space names them where ``kernel`` is not given), or other
    settings.
    ``new_configs``: whether this run's space has configs the study has not measured
    (:func:`measures_new`; None: not told); with none, ``--force`` is said to
    keep the trials and measure nothing new (a space narrowed back: the trials of the
    configs it leaves out stay in the study and its report, and enter no final)."""
    keeps = "and add new ones to them" if new_configs is not False else (
        "under these settings (it measures nothing new: the study holds every config of "
        "this space)")
    ways = (f"rerun with {given('force')} to keep its trials {keeps}, or "
            f"with {given('study', 'NEW')} to start a new study")
    damage = fingerprint_damage(meta)
    if damage:
        rest = [c for c in changed if "" not in damage and c.split(":")[0] not in damage]
        more = f"; besides, other settings differ ({'; '.join(rest)})" if rest else ""
        return (f"{root}: cannot resume, the fingerprint in its study.json is damaged "
                f"({'; '.join(damage.values())}){more}; restore study.json from a copy, or "
                f"{ways}")
    recorded = meta.get("space_text")
    if isinstance(recorded, str):
        # a dict's change by its keys (:func:`key_changes`), a file's by its lines
        lines = (key_changes(recorded, space_text) if keyed else []) or \
            text_changes(recorded, space_text)
        if lines:     # the space's own lines, where its hash says only that they differ
            changed = [f"the space's {'; '.join(lines)}" if c.startswith(
                "space_content:") else c for c in changed]
    source = [c for c in changed if c.startswith("kernel_source:")]
    if source:      # winners come from the new source's trials alone (winners.Sources)
        ways = measure_edited()
    if gone:
        where = "the space or the files it names"
        where = where if kernel is None else looked_for(kernel, where)
        return (f"{root}: cannot resume, its kernel's source cannot be found as it was "
                f"measured ({files_gone(gone)}; {'; '.join(changed)}); "
                f"{put_back(gone, where)}, or {ways}")
    why = "its kernel's source changed since it was measured" if source else \
        "it was measured with other settings"
    return f"{root}: cannot resume, {why} ({'; '.join(changed)}); {ways}"


def measure_edited() -> str:
    """How to measure a study's kernel after its source was edited, keeping its trials:
    what a resume refused for the edit says, and a sweep stopped by one
    (:class:`~sweeper.errors.SourceEdited`)."""
    return (f"rerun with {given('force')} to keep its trials and measure its configs "
            "again on this source (those of the earlier source stay in the study but "
            f"choose no winner), or with {given('study', 'NEW')} to measure this source "
            "in a new study")


def open_study(store: Storage, space: Space, kernel: Kernel, device: Device, *,
               command: str, force: bool = False, worker: str | None = None,
               budget: Budget | None = None,
               before_writing: Callable[[], T] | None = None) -> T | None:
    """Create the study, or check that the one there may be resumed by this run (its
    journal then taken for this process and repaired if it needs it); a space
    none of whose configs can be launched on ``device`` is refused before anything is
    written.  The device's physical bounds are recorded either way: the report names those
    in force.  With ``worker`` (``sweeper worker``'s id) the study is opened alongside
    other workers and the id held for this process (a StudyError, nothing written, where
    another live process holds it); of workers starting a new study together one creates
    it and the others join it (:meth:`Storage.create` is atomic).  ``before_writing`` is
    called once the study may be created or resumed and before anything is written, and
    what it returns is returned (the engine builds the sampler there: a factory that fails
    leaves the store as it was).  ``budget``: the budgets this run applies (its options
    over the space's; the space's where None), added to the study's ``budgets``."""
    facts = device.facts()
    require_launchable(space, facts.env(), facts.max_footprint)
    environment = device.environment()
    bounds = device.bounds().to_json()
    wanted = fingerprint(space, kernel, device, environment)
    when = now()                # one time for the run's budgets and its resumed line
    ran_under = {"when": when, **dataclasses.asdict(budget or space.budget)}
    if store.orphaned():
        raise StudyError(f"{store.root}: {JOURNAL} without study.json; it "
                         "cannot be checked against this run; move it away or pass "
                         f"{given('study', 'NEW')}")
    table = environment.get(_TABLE_PATH)
    respelled = Respelled(space)        # once for both checks and the hashes kept
    if store.exists():
        check_resumable(store, wanted, space, force, table, facts=facts, respelled=respelled)
    built = before_writing() if before_writing is not None else None
    created = not store.exists() and store.create({
        "format": FORMAT, "study": store.name, "kernel": space.kernel,
        "kernel_name": kernel.name, "created": when, "command": command,
        "sampler": sampler_json(space), "samplers": [sampler_json(space)],
        "environment": environment, "bounds": bounds, "headline": kernel.headline.value,
        "finals": finals_wanted(space, device), "axes": axes_of(space),
        "meta_axes": [a.name for a in space.axes if a.role is AxisRole.META],
        "zipped": zipped_json(space), "budgets": [ran_under],
        **resumed_with(space, kernel, device, wanted)})
    # again unless created here: another worker may have created it
    forced = [] if created else check_resumable(store, wanted, space, force, table,
                                                respelled=respelled)
    if worker is not None:
        store.share()
        store.enlist(worker)
    elif not created:
        store.open_journal()
    if not created:
        store.note_resumed(when, axes_of(space), sampler=sampler_json(space), forced=forced,
                           environment=environment, budget=ran_under, bounds=bounds,
                           finals=finals_wanted(space, device), zipped=zipped_json(space),
                           **{**resumed_with(space, kernel, device, wanted),
                              **space_file_kept(store.study_meta(), space),
                              **respelled_kept(store.meta(), respelled)})
    return built


def space_file_kept(meta: StudyMeta, space: Space) -> dict[str, str]:
    """The space file's path and folder a resume by ``space`` keeps as the study recorded
    them, where it is the file the study's last run read (named from another working
    folder, ``../a/spaces/x.yaml`` for ``spaces/x.yaml``): the path is a display field,
    relative to the folder its command ran in, and the report's command to reproduce the
    study names it beside the command that created it, from the same folder; another file
    (moved, or another of the same study) is recorded as this run named it.  None kept
    from a study that recorded no folder (an older sweeper's)."""
    if not meta.space_folder or not meta.space_path:
        return {}
    recorded = Path(meta.space_folder, Path(meta.space_path).name)
    now = Path(space.folder, Path(space.path).name)
    if recorded.resolve() != now.resolve():
        return {}
    return {"space_path": meta.space_path, "space_folder": meta.space_folder}


def respelled_kept(meta: Mapping[str, Any], respelled: Respelled
                   ) -> dict[str, dict[str, str]]:
    """The ``respelled`` hashes a resume records where the study (``meta``, its
    study.json) recorded its kernel's source as an earlier sweeper hashed it
    (:func:`source_respelled`, asked of the resume's ``respelled``): that hash with the
    one the resume records, beside those kept, so its trials stay measured on the source
    now; none where it did not."""
    spelled = respelled(meta)
    if spelled is None:
        return {}
    recorded, now = spelled
    return {"respelled": {**meta.get("respelled", {}), recorded: now}}


def resumed_with(space: Space, kernel: Kernel, device: Device, wanted: Mapping[str, str]
                 ) -> dict[str, Any]:
    """What a resume records in study.json as the study's own: this run's fingerprint
    (``wanted``), the files its kernel's source hash read beside those the kernel's
    options name (:func:`~sweeper.kernels.options_hashed`: a ``cuda`` kernel's
    includes), device note (a replay's names its table), space (with its kernel's
    footprint rule, which an export keeps) and measurement, so that the next run is
    checked against them, and the key of the autotuner ``kernel`` is declared with as
    this run imported it (``None``: it has none), which a triton export keys on, and how
    a CUDA C kernel's configs compile and launch (``cuda_launch``), which a header export
    writes.
    A resume is allowed where they match or with ``--force``, which so adopts the new
    settings: the same command run again resumes without it (what it changed is kept in
    ``forced``)."""
    spec = device.measure_spec(space.measure)
    return {"fingerprint": dict(wanted), "kernel_source_hash": wanted["kernel_source"],
            "kernel_source_files": options_hashed(space.kernel, dict(space.kernel_options)),
            "device_note": device.note, "space_path": space.path,
            "space_folder": space.folder, "space_text": space.text,
            "space_sha256": space.sha256, "footprint_rule": space.shape.footprint.text,
            "autotune_key": None if getattr(kernel, "autotune_params", None) is None else
            list(getattr(kernel, "autotune_key", ())), "cuda_launch": _launch_record(kernel),
            "measure": vars(spec), "measure_requested": vars(space.measure),
            "measure_text": spec.describe()}


def _launch_record(kernel: Kernel) -> dict[str, Any] | None:
    """What ``kernel``'s launch records of itself, where it is one that does (a CUDA C
    launch: :meth:`~sweeper.kernels._cuda_build.CudaLaunch.recorded`), else ``None``."""
    record = getattr(getattr(getattr(kernel, "plan", None), "launch", None), "recorded", None)
    return record() if callable(record) else None


def check_resumable(store: Storage, wanted: Mapping[str, str], space: Space, force: bool,
                    table: str | None = None, *, planned: bool = False,
                    facts: DeviceFacts | None = None,
                    respelled: Respelled | None = None) -> list[str]:
    """A StudyError where the study in ``store`` was measured with other settings than
    ``wanted`` (this run's fingerprint), unless ``force``; what differs (``key: old ->
    new``, none where the study may be resumed as it is; another replay table named by
    its path, ``table`` this run's, as the device was given it).  ``planned``: what
    ``plan`` tells of the run's resume, ``wanted`` being :func:`planned_fingerprint`,
    whose entries alone are compared (the run would refuse what it refuses).  ``facts``:
    the GPU the run measures on, by which a refusal tells whether ``--force`` would add
    configs (:func:`measures_new`; None: not told).  ``respelled``: the run's
    :class:`Respelled`, so that the checks of one open work it out once."""
    meta = store.meta()
    have = recorded_fingerprint(meta, space, respelled)
    if planned:
        have = {k: v for k, v in have.items() if k in wanted}
    changed = [_table_change(have, _recorded_table(meta), table)
               if c.startswith(f"{_TABLE}:") else c for c in fingerprint_diff(have, wanted)]
    if changed and not force:
        raise StudyError(resume_refused(
            store.root, changed, meta, space.text,
            None if facts is None else measures_new(store, space, facts), keyed=space.keyed,
            gone=_source_gone(changed, space, meta), kernel=space.kernel))
    return changed


def _source_gone(changed: list[str], space: Space, meta: Mapping[str, Any]) -> list[str]:
    """Where the kernel's source hash is among what ``changed``, the files its source
    read as the study (``meta``, its study.json) took that hash that are gone now
    (:func:`~sweeper.kernels.options_missing`: a ``cuda`` kernel's included file of those
    the study recorded beside it): the hash of what is left says nothing of an edit.
    Empty where it is not, or none is."""
    if not any(c.startswith("kernel_source:") for c in changed):
        return []
    return options_missing(space.kernel, dict(space.kernel_options),
                           meta.get("kernel_source_files") or [])


#: The most configs a refused resume enumerates to tell whether ``--force`` would measure
#: any (:func:`measures_new`): past them, it is not told, and the refusal comes at once.
SEARCHED_UP_TO = 50_000


def measures_new(store: Storage, space: Space, facts: DeviceFacts) -> bool | None:
    """Whether a resume forced past other settings would measure some valid config of
    ``space`` on the GPU ``facts`` describes that the study in ``store`` has not measured
    on its kernel source now: True at the first such config enumerated, without counting
    the rest (in a study that lacks any, commonly among the first); False where it holds
    every one; None where :data:`SEARCHED_UP_TO` configs were enumerated without telling
    (a space that large, mostly measured or ruled out), so the refusal never waits on it."""
    from sweeper.store import key_of
    from sweeper.winners import Sources

    done = {t.key() for t in Sources.of(store.study_meta()).done(store.records()[0])}
    enumerated = resolved(space, facts.env(), facts.max_footprint)
    for choice, outcome in itertools.islice(enumerated, SEARCHED_UP_TO):
        if not isinstance(outcome, Invalid) and key_of(choice) not in done:
            return True
    return None if space.size > SEARCHED_UP_TO else False


def sampler_json(space: Space) -> dict[str, Any]:
    """``space``'s sampler as ``study.json`` keeps it (``sampler``, and in ``samplers``)."""
    return {"name": space.sampler.name, "seed": space.sampler.seed,
            "baseline": [list(p) for p in space.sampler.baseline]}


def zipped_json(space: Space) -> dict[str, dict[str, list[Any]]]:
    """``space``'s zipped groups as ``study.json`` keeps them: the one-at-a-time report
    varies each as one axis, its rows its values."""
    return {t.name: {"members": list(t.members), "rows": [list(r) for r in t.rows]}
            for t in space.ties}


def axes_of(space: Space) -> dict[str, list[str]]:
    """Each axis of ``space`` and its labels, as ``study.json`` keeps them."""
    return {a.name: list(a.labels) for a in space.axes}


def now() -> str:
    """The current UTC time to the second, ISO 8601, as records stamp it."""
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


