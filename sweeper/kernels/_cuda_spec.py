"""A CUDA C/C++ kernel as sweeper sees it before anything is compiled: its source file
and what that file includes, the entry it launches, the arguments in order, and the
NVRTC options a config compiles to.  Nothing here imports torch or CuPy, so a space
naming a ``.cu`` file is checked, planned and listed at no cost.

A config compiles to these defines (``-DNAME=value``), so one source serves every point
of the space and Kernel Tuner kernels compile unchanged:

- each meta-parameter (every swept axis but the grid, ``grid_y`` and ``grid_z`` too, the
  block, dtype and the dimensions), unless
  the ``template`` names it (a macro of a template parameter's name would break the
  template);
- ``block_size_x``: the block, ``blockDim.x`` of the launch (Kernel Tuner's name);
- ``block_size_y`` and ``block_size_z``: the block's ``blockDim.y`` and ``blockDim.z``,
  axes of the space's like any define and read by the launch too
  (:func:`~sweeper.kernels._cuda_build.launch_dims`), and 1 where no axis sweeps them, as
  Kernel Tuner defines them, so that a kernel of its that reads them with no ``#ifndef``
  of its own compiles;
- ``DTYPE``: the C type of the problem's dtype (``float``, ``__half``, ``__nv_bfloat16``
  ...), so a kernel written over ``DTYPE`` runs at every dtype the space sweeps.

``block_size_x`` and ``DTYPE`` are sweeper's, so no axis may take their names
(:func:`meta_problem`).  The grid in y and z is no define: the launch axes ``grid_y`` and
``grid_z`` give it (one compile serves every problem).
"""

from __future__ import annotations

import hashlib
import os
import re
import string
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from sweeper.escape import cut

#: The C type each dtype compiles to as ``-DDTYPE=...``.
C_TYPES = {"float64": "double", "float32": "float", "float16": "__half",
           "bfloat16": "__nv_bfloat16", "int64": "long long", "int32": "int",
           "int16": "short", "int8": "signed char", "uint8": "unsigned char"}
#: The define that carries the problem's C type.
DTYPE_DEFINE = "DTYPE"
#: The define that carries the block (Kernel Tuner's name for ``blockDim.x``).
BLOCK_DEFINE = "block_size_x"
#: Kernel Tuner's names for ``blockDim.y`` and ``blockDim.z``: swept as axes, or defined at
#: 1 where none sweeps them.
EXTENT_DEFINES = ("block_size_y", "block_size_z")
#: How a scalar argument may be typed (``n:int64``, ``0.5:float32``, ``0.5:DTYPE``).
SCALAR_TYPES = ("int32", "int64", "uint32", "uint64", "float32", "float64", DTYPE_DEFINE)
#: ``#include "file"`` or ``#include <file>``: a file of the kernel's own where NVRTC
#: finds it among the kernel's files (:func:`include_paths`), else a system header.
INCLUDE = re.compile(r'^\s*#\s*include\s*(?:"([^"]+)"|<([^>]+)>)', re.MULTILINE)
#: A C identifier: what an entry and a name in a template may be.
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
NUMBER = re.compile(r"[-+]?(\d+\.?\d*([eE][-+]?\d+)?|\.\d+([eE][-+]?\d+)?)")
#: What is no code: a comment, a raw string (``R"(...)"``), a string or a character
#: literal (not a digit separator, ``1'000``), each matched from where it opens, so that
#: ``"//"`` is a string and ``// "`` a comment.
NOT_CODE = re.compile(r"//[^\n]*|/\*.*?\*/"
                      r'|(?<![A-Za-z0-9_])(?:u8|u|U|L)?R"([^()\\\s"]{0,16})\(.*?\)\1"'
                      r'|"(?:\\.|[^"\\\n])*"'
                      r"|(?<![A-Za-z0-9_.])'(?:\\.|[^'\\\n])*'", re.DOTALL)
#: A ``#define``, whose name a conditional on it may then find defined.
DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)", re.MULTILINE)
#: A line of a preprocessor conditional: its keyword and what follows.
CONDITIONAL = re.compile(r"\s*#\s*(if|ifdef|ifndef|elifdef|elifndef|elif|else|endif)\b(.*)",
                         re.DOTALL)
#: ``defined(X)``, ``defined X`` or their negation, alone: a condition read exactly.
DEFINED = re.compile(r"(!\s*)?defined\s*(?:\(\s*([A-Za-z_]\w*)\s*\)|\s([A-Za-z_]\w*))")
#: A name reserved to the compiler (``__CUDACC__``, ``__CUDA_ARCH__``, ``_WIN32``): NVRTC
#: may define it, so a conditional on it is never taken as false.
RESERVED = re.compile(r"__\w*|_[A-Z]\w*")
#: Where a template's parameter list opens.
TEMPLATE_HEAD = re.compile(r"\btemplate\s*<")
#: What a template declares after its parameter list: a struct's or a function's name.
TEMPLATE_CLASS = re.compile(r"\s*(?:struct|class|union)\s+([A-Za-z_]\w*)")
TEMPLATE_FUNCTION = re.compile(r"([A-Za-z_]\w*)\s*\(")
LAUNCH_BOUNDS = re.compile(r"__launch_bounds__\s*\([^)]*\)")


@dataclass(frozen=True)
class Arg:
    """One argument of the entry, in order: a tensor (its pointer), a dimension or a
    literal number, each scalar passed as ``type`` (``None``: int32 for a dimension or an
    integer literal, float32 for a real one)."""

    name: str
    type: str | None = None

    @classmethod
    def read(cls, item: object) -> Arg:
        """``"n:int64"`` (or ``"n"``, untyped) as written, its type not checked."""
        name, colon, kind = str(item).partition(":")
        return cls(name.strip(), kind.strip() if colon else None)

    def scalar_type(self, dtype: str) -> str:
        """The type the scalar is passed as, at the problem's ``dtype``."""
        chosen = self.type or ("float32" if NUMBER.fullmatch(self.name) and
                               not self.name.lstrip("+-").isdigit() else "int32")
        return dtype if chosen == DTYPE_DEFINE else chosen


def code_only(text: str) -> str:
    """``text`` with its comments and string and character literals each made one space
    (a line break they hold kept): the code a compiler reads, where a name is declared
    or a macro invoked, never one only mentioned."""
    return NOT_CODE.sub(lambda m: " " + "\n" * m.group().count("\n"), text)


def active_code(text: str, defined: Collection[str] | None = None,
                written: Collection[str] = (), *, conditions: bool = False) -> str:
    """:func:`code_only` of ``text`` without the lines a preprocessor conditional leaves
    out for certain, each made empty (the line count kept); the directives' own lines
    are emptied too, but where ``conditions`` those whose condition the preprocessor
    may evaluate (their enclosing code kept, no branch before taken for certain), which
    read the names they test (``#if UNROLL > 1``).  A branch is left out where its
    condition is false whatever the config: ``#if 0`` (any integer literal is read);
    with ``defined``, the names every config defines (``-D``), also ``#ifdef X``,
    ``#ifndef X``, ``#if defined(X)`` and ``#if !defined(X)`` where X is neither in
    ``defined`` nor written in a ``#define`` of ``text`` nor reserved to the compiler
    (``__CUDA_ARCH__``), and their negations where X is in ``defined``; ``#elif``,
    ``#elifdef`` and ``#elifndef`` (C23) are read as ``#if``, ``#ifdef`` and
    ``#ifndef``.  Any other condition (``#if UNROLL > 1``) may hold: its branch is kept,
    and so are the ``#elif`` and ``#else`` branches after it.  ``written``: names a
    ``#define`` elsewhere may give (a file that includes ``text``)."""
    code = code_only(text)
    written = {*DEFINE.findall(code), *written}

    def holds(kind: str, rest: str) -> bool | None:
        rest = rest.strip()
        if kind == "if" and re.fullmatch(r"\d+[uUlL]*", rest):
            return int(rest.rstrip("uUlL")) != 0
        form = DEFINED.fullmatch(rest) if kind == "if" else IDENTIFIER.fullmatch(rest)
        if form is None or defined is None:
            return None
        name = (form.group(2) or form.group(3)) if kind == "if" else form.group()
        known = True if name in defined else \
            None if name in written or RESERVED.fullmatch(name) else False
        negated = kind == "ifndef" or (kind == "if" and form.group(1) is not None)
        return known if known is None or not negated else not known

    lines, out = code.split("\n"), []
    #: per open conditional: whether its enclosing code is kept, and whether a branch
    #: before was taken for certain ("yes"), may have been ("maybe") or was not ("no")
    stack: list[tuple[bool, str]] = []
    active, i = True, 0
    while i < len(lines):
        j = i
        while lines[j].endswith("\\") and j + 1 < len(lines):
            j += 1
        directive = CONDITIONAL.match(" ".join(x.rstrip("\\") for x in lines[i:j + 1]))
        if directive is None:
            out += lines[i:j + 1] if active else [""] * (j + 1 - i)
            i = j + 1
            continue
        kind, rest = directive.groups()
        evaluated = active if kind in ("if", "ifdef", "ifndef") else \
            kind.startswith("elif") and bool(stack) and stack[-1][0] and stack[-1][1] != "yes"
        if kind in ("if", "ifdef", "ifndef"):
            stack.append((active, "no"))
        if kind == "endif":
            active = stack.pop()[0] if stack else True
        elif stack:
            enclosing, taken = stack[-1]
            cond = True if kind == "else" else holds(
                "if" if kind == "elif" else kind.removeprefix("el"), rest)
            stack[-1] = (enclosing, "yes" if taken == "yes" or cond is True else
                         taken if cond is False else "maybe")
            active = enclosing and taken != "yes" and cond is not False
        out += lines[i:j + 1] if conditions and evaluated else [""] * (j + 1 - i)
        i = j + 1
    return "\n".join(out)


def parse_args(raw: Sequence[str], tensors: Sequence[str], dims: Sequence[str]
               ) -> tuple[Arg, ...] | str:
    """The entry's arguments from ``["dst", "src", "n", "0.5:float32"]``, or why not."""
    if isinstance(raw, str) or not raw:
        return "args lists the entry's arguments in order: [TENSOR, DIM, 0.5:float32, ...]"
    args = []
    for item in raw:
        arg = Arg.read(item)
        if arg.type is not None and arg.type not in SCALAR_TYPES:
            return f"argument {item!r}: type {arg.type!r}; allowed: {', '.join(SCALAR_TYPES)}"
        if arg.name in tensors and arg.type is not None:
            return f"argument {item!r}: a tensor is passed as its pointer and takes no type"
        if arg.name not in tensors and arg.name not in dims and \
                NUMBER.fullmatch(arg.name) is None:
            return (f"argument {arg.name!r} is no tensor, dimension or number; known: "
                    f"{', '.join((*tensors, *dims))}")
        args.append(arg)
    return tuple(args)


#: The values a scalar argument of each integer type holds, least and most (the 8- and
#: 16-bit ones as a ``DTYPE`` argument at an integer dtype).
INT_RANGES = {"int8": (-2**7, 2**7 - 1), "uint8": (0, 2**8 - 1), "int16": (-2**15, 2**15 - 1),
              "int32": (-2**31, 2**31 - 1), "uint32": (0, 2**32 - 1),
              "int64": (-2**63, 2**63 - 1), "uint64": (0, 2**64 - 1)}


def int_overflow(raw: Sequence[str], values: Mapping[str, Iterable[int | str]],
                 where: str = "in this space") -> tuple[str, str] | None:
    """The first scalar argument of ``raw`` (the entry's arguments as written) passed as
    an integer type (an untyped name or integer literal as int32; one typed ``DTYPE`` as
    each integer dtype ``values`` holds for ``dtype``) that takes a value the type does
    not hold, and why, or ``None``: numpy would refuse the value as the argument is made
    and every such launch fail.  A literal takes its own value; a name those ``values``
    holds for it (an axis's or dimension's values, a config's value), ``n`` also each
    ``footprint`` over each ``itemsize`` there (over its own dtype's, typed ``DTYPE``); a
    name it does not hold (a tensor) and an argument written wrong (another check says
    why) pass.  The one check of every path that feeds a launch its integer arguments: a
    space's values, a ``sweeper.cuda`` kernel's, each config's where an axis is an
    expression."""
    from sweeper.core import DTYPES

    args = [(str(item), Arg.read(item)) for item in raw]
    dtypes = [d for d in dict.fromkeys(map(str, values.get("dtype", ()))) if d in INT_RANGES]
    footprints = [f for f in values.get("footprint", ()) if isinstance(f, int)]
    for item, arg in args:
        name = arg.name
        if arg.type is not None and arg.type not in SCALAR_TYPES:
            continue
        literal = NUMBER.fullmatch(name) is not None
        if literal and not name.lstrip("+-").isdigit():
            continue                    # a real number typed as an integer: not ours
        given = [int(name)] if literal else \
            [v for v in values.get(name, ()) if isinstance(v, int)]
        if arg.type == DTYPE_DEFINE:    # each integer dtype, n from its own itemsize
            types = [(d, f"as DTYPE, so as {d}", [DTYPES[d]]) for d in dtypes]
        else:
            chosen = arg.scalar_type("float32")
            how = "untyped, so as int32" if arg.type is None else f"as {chosen}"
            types = [(chosen, how, [i for i in values.get("itemsize", ())
                                    if isinstance(i, int) and i])]
        for chosen, how, itemsizes in types:
            if chosen not in INT_RANGES:
                continue
            reached = given + ([f // i for f in footprints for i in itemsizes]
                               if name == "n" and not literal else [])
            least, most = INT_RANGES[chosen]
            out = next((v for v in (max(reached, default=0), min(reached, default=0))
                        if not least <= v <= most), None)
            if out is None:
                continue
            bound = f"at most {most}" if out > most else f"at least {least}"
            if arg.type == DTYPE_DEFINE:
                allowed = f"a value {chosen} holds, {least} to {most}, or dtypes that hold it"
            elif chosen in ("int32", "uint32") and out <= INT_RANGES["int64"][1]:
                typed = ", ".join(f'"{name}:int64"' if other == item else
                                  f'"{other}"' if ":" in other else other for other, _ in args)
                allowed = f"type it as int64, args: [{typed}]"
            else:
                allowed = f"a value {chosen} holds, {least} to {most}"
            taken = f"is {out}" if literal else f"reaches {out} {where}"
            return name, (f"argument {name!r} is passed {how}, which holds {bound}, and "
                          f"{taken}; allowed: {allowed}")
    return None


def meta_problem(name: str) -> str | None:
    """Why no meta-parameter may be named ``name``, or ``None``: sweeper defines
    ``block_size_x`` (the block) and ``DTYPE`` (the dtype's C type) itself at every
    compile, in place of a meta-parameter's define of that name, so such an axis would
    change nothing, its configs repeating one another under labels never launched."""
    if name == BLOCK_DEFINE:
        return (f"sweeper defines {BLOCK_DEFINE} itself, as each launch's block (blockDim.x), "
                f"so its own -D{BLOCK_DEFINE} would be replaced and its configs repeat one "
                "another; allowed: the block sizes as the launch axis block (block: [64, "
                f"128, 256]: Kernel Tuner's {BLOCK_DEFINE})")
    if name == DTYPE_DEFINE:
        return (f"sweeper defines {DTYPE_DEFINE} itself, as the C type of the problem's dtype "
                f"(-D{DTYPE_DEFINE}=float), so its own -D{DTYPE_DEFINE} would be replaced and "
                "its configs repeat one another; allowed: the dtypes as the problem axis "
                "dtype (dtype: [float32, float16])")
    return None


#: Why :data:`RESERVED_OPTIONS` (and :data:`RESERVED_PTXAS`) refuses an option, by what it
#: does: sweeper gives every compile its own; the tool (NVRTC, or ptxas, which assembles
#: NVRTC's PTX) would read or write files sweeper neither hashes nor watches (their edits
#: would go unseen by the cache key and the study's source hash, or a run would leave
#: files behind); it would make other code than the whole program's cubin sweeper
#: caches, loads and launches.
_SETS = "sweeper sets {names} itself"
_FILES = "{names} has {tool} read or write files sweeper neither hashes nor watches"
_OUTPUT = ("{names} has {tool} make other code than the whole program's cubin sweeper "
           "loads and launches")
_CODE_OPTIONS = "options of the code compiled (-use_fast_math, --fmad=false, -maxrregcount=64)"
#: The NVRTC options a kernel's ``nvrtc_options`` may not give, each by its short and its
#: long name as NVRTC documents them, with why (:data:`_SETS`, :data:`_FILES`,
#: :data:`_OUTPUT`) and what to do instead.
RESERVED_OPTIONS: dict[tuple[str, ...], tuple[str, str]] = {
    ("-D", "--define-macro"): (_SETS, "a define is an axis: params: {NAME: [value]}"),
    ("-U", "--undefine-macro"): (_SETS, "an axis its source reads, or an #undef in the "
                                 "source"),
    ("-arch", "--gpu-architecture"): (_SETS, "the GPU's own, which every compile takes"),
    ("-std", "--std"): (_SETS, "C++17, which every compile takes"),
    **dict.fromkeys((("-I", "--include-path"), ("-include", "--pre-include")), (
        _FILES, "a header beside the .cu file or in its folder, #included: its text is "
        "part of the kernel's source")),
    # automatic PCH (-pch) too: a header compiled by an earlier compile stands in for
    # the one the source #includes now
    **dict.fromkeys((("-pch", "--pch"), ("-use-pch", "--use-pch"),
                     ("-create-pch", "--create-pch"), ("-pch-dir", "--pch-dir")), (
        _FILES, "the headers #included by the source, compiled with it (a precompiled "
        "header is a file sweeper does not hash)")),
    **dict.fromkeys((("-time", "--time"), ("-fdevice-time-trace", "--fdevice-time-trace")), (
        _FILES, _CODE_OPTIONS)),
    **dict.fromkeys((("-ptx", "--ptx"), ("-dc", "--device-c"), ("-dlto", "--dlink-time-opt"),
                     ("-gen-opt-lto", "--gen-opt-lto"),
                     ("-ewp", "--extensible-whole-program"),
                     ("-optix-ir", "--optix-ir"),
                     ("-fdevice-syntax-only", "--fdevice-syntax-only")), (
        _OUTPUT, f"{_CODE_OPTIONS}, in a whole program (-rdc=false, NVRTC's default)")),
    ("-rdc", "--relocatable-device-code"): (
        _OUTPUT, "-rdc=false (NVRTC's default): the kernel whole in its source and the "
        "files it includes"),
}
#: The options of :data:`RESERVED_OPTIONS`' names that it does not refuse: a whole
#: program, NVRTC's default, as sweeper compiles it anyway.
ALLOWED_RESERVED = frozenset({"-rdc=false", "--relocatable-device-code=false"})
#: The NVRTC option that passes its value to ptxas: one ptxas option, which NVRTC hands on
#: whole (given ``-Xptxas=-v,--warn-on-spills``, ptxas stops at the unknown option
#: ``v,--warn-on-spills``; NVRTC of CUDA 13 on an H100), not nvcc's comma-separated list.
PTXAS_OPTIONS = ("-Xptxas", "--ptxas-options")
_PTXAS_CODE = "ptxas options of the code assembled (-Xptxas=-v, -Xptxas=--warn-on-spills)"
#: The ptxas options ``-Xptxas=`` may not pass, each by its short and long name as ptxas
#: documents them, with why and what to do instead (as :data:`RESERVED_OPTIONS`).
RESERVED_PTXAS: dict[tuple[str, ...], tuple[str, str]] = {
    ("-arch", "--gpu-name"): (_SETS, "the GPU's own, which every compile takes"),
    **dict.fromkeys((("-o", "--output-file"), ("-optf", "--options-file")), (
        _FILES, _PTXAS_CODE)),
    **dict.fromkeys((("-c", "--compile-only"), ("-e", "--entry"),
                     ("-ias", "--input-as-string"), ("-preserve-relocs", "--preserve-relocs"),
                     ("-astoolspatch", "--compile-as-tools-patch"),
                     ("-ewp", "--extensible-whole-program")), (
        _OUTPUT, f"{_PTXAS_CODE}, assembling the whole program")),
}
#: An NVRTC option as a list item: a name after one or two dashes, no space.
NVRTC_OPTION = re.compile(r"--?[A-Za-z][^\s]*")
#: The most options ``nvrtc_options`` may give, and the longest each may be.
MAX_NVRTC_OPTIONS, MAX_NVRTC_OPTION = 32, 200


def nvrtc_option_problem(options: object) -> tuple[int | None, str] | None:
    """Where ``options`` (a kernel's ``nvrtc_options``: Kernel Tuner's
    ``compiler_options``) are no NVRTC options every compile may add, and why: the index
    of the one at fault (``None``: the list itself), or ``None`` where they are.  Each is
    one option as NVRTC takes it (``-use_fast_math``, ``--fmad=false``, ``-maxrregcount=64``),
    a name after ``-`` or ``--`` and no space, none sweeper sets itself, has NVRTC (or
    ptxas, through ``-Xptxas=``) read or write other files, or makes other code than a
    whole program's cubin (:data:`RESERVED_OPTIONS`, :data:`RESERVED_PTXAS`), by either
    of its names."""
    if not isinstance(options, (list, tuple)) or len(options) > MAX_NVRTC_OPTIONS:
        return None, (f"{cut(repr(options), 60)} is no list of NVRTC options; allowed: up to "
                      f"{MAX_NVRTC_OPTIONS} options, such as [-use_fast_math, --fmad=false]")
    for i, option in enumerate(options):
        if not isinstance(option, str) or len(option) > MAX_NVRTC_OPTION or \
                NVRTC_OPTION.fullmatch(option) is None:
            return i, (f"{cut(repr(option), 60)} is no NVRTC option; allowed: one option a "
                       "list item, a name after - or -- and without spaces (-use_fast_math, "
                       "--fmad=false, -maxrregcount=64)")
        if option in ALLOWED_RESERVED:
            continue
        name, _, value = option.partition("=")
        if name in PTXAS_OPTIONS:
            wrong = _ptxas_problem(option, value)
            if wrong is not None:
                return i, wrong
            continue
        wrong = _reserved(option, option, RESERVED_OPTIONS, "NVRTC", joined=True)
        if wrong is not None:
            return i, wrong
    return None


def _ptxas_problem(option: str, value: str) -> str | None:
    """Why ``option`` (``-Xptxas=VALUE``) passes ptxas no option, a list of them (which
    NVRTC hands on as one, and ptxas refuses), or one of :data:`RESERVED_PTXAS`, or
    ``None``."""
    if NVRTC_OPTION.fullmatch(value) is None:
        return (f"{option!r} passes ptxas no option; allowed: {PTXAS_OPTIONS[0]}=OPTION "
                "(-Xptxas=-v, -Xptxas=--maxrregcount=64)")
    if "," in value:
        parts = ", ".join(f"{option.partition('=')[0]}={part}" for part in value.split(","))
        return (f"{option!r}: NVRTC passes ptxas its value as one option, which ptxas "
                f"refuses; allowed: one ptxas option a {PTXAS_OPTIONS[0]}= ([{parts}])")
    return _reserved(option, value, RESERVED_PTXAS, "ptxas")


def _reserved(option: str, part: str, table: Mapping[tuple[str, ...], tuple[str, str]],
              tool: str, *, joined: bool = False) -> str | None:
    """Why ``part`` (``option`` itself, or one of the options ``option`` passes ptxas) is
    one of ``table``'s, by either name, alone or with ``=VALUE`` (``joined``: a name of
    one letter with its value run on, as ``-DVEC=2``), or ``None``."""
    for names, (why, instead) in table.items():
        if any(part == n or part.startswith(f"{n}=") or
               (joined and len(n) == 2 and part.startswith(n)) for n in names):
            return (f"{option!r}: {why.format(names=' / '.join(names), tool=tool)}; "
                    f"allowed: {instead}")
    return None


def template_names(template: str) -> list[str] | str:
    """The meta-parameters ``copy<{VEC}, {UNROLL}>`` fills in, or why it is no template."""
    try:
        parsed = [(f, spec, conv) for _, f, spec, conv in string.Formatter().parse(template)
                  if f is not None]
    except ValueError as err:
        return f"{template!r} is not a template: {err}"
    formatted = next((f"{{{f}{'!' + conv if conv else ''}{':' + spec if spec else ''}}}"
                      for f, spec, conv in parsed if spec or conv), None)
    if formatted is not None:      # {VEC:x} would instantiate copy<10> at VEC=16
        return (f"{template!r}: {formatted} formats the value; allowed: {{NAME}} alone, "
                "filled in with the value in decimal")
    fields = [f for f, _, _ in parsed]
    head = template.split("<", 1)[0].strip()
    if "<" not in template or not template.rstrip().endswith(">") or \
            IDENTIFIER.fullmatch(head.split("::")[-1]) is None:
        return (f"{template!r} is not a template instantiation; allowed: "
                "entry<{META}, ...> such as copy<{VEC}, {UNROLL}>")
    bad = [f for f in fields if IDENTIFIER.fullmatch(f) is None]
    if bad or not fields:
        return (f"{template!r}: {{{bad[0]}}} is not a meta-parameter name" if bad else
                f"{template!r} names no meta-parameter; write them as {{NAME}}")
    return fields


@dataclass(frozen=True)
class Template:
    """A template the source declares: the function or struct's name, its parameters'
    names in order and its head as written (``template <int VEC, int UNROLL>``)."""

    name: str
    params: tuple[str, ...]
    head: str


def _split_top(text: str, sep: str) -> list[str]:
    """``text`` split at each ``sep`` outside brackets (``()``, ``[]``, ``{}``, and ``<>``
    outside those, where ``>`` may compare)."""
    parts, paren, angle, start = [], 0, 0, 0
    for i, char in enumerate(text):
        paren += (char in "([{") - (char in ")]}")
        angle += paren == 0 and (char == "<") - (char == ">")
        if char == sep and paren == 0 and angle == 0:
            parts.append(text[start:i])
            start = i + 1
    return [*parts, text[start:]]


def templates(text: str, defined: Collection[str] | None = None) -> list[Template]:
    """The templates ``text`` declares with a parameter list (a specialization's
    ``template <>`` names none), comments and literals left out, and the code a
    preprocessor conditional leaves out for certain where every config defines
    ``defined`` (:func:`active_code`: ``#if 0``, ``#ifdef X`` of an X no config defines);
    a parameter's default is no part of its name (``int UNROLL = 1`` is ``UNROLL``)."""
    text = active_code(text, defined)
    found = []
    for match in TEMPLATE_HEAD.finditer(text):
        depth, paren, end = 1, 0, match.end()
        while end < len(text) and depth:
            char = text[end]
            paren += (char in "([") - (char in ")]")
            depth += (paren == 0 and char == "<") - (paren == 0 and char == ">")
            end += 1
        params = []
        for part in _split_top(text[match.end():end - 1], ","):
            names = [n for n in IDENTIFIER.findall(_split_top(part, "=")[0])
                     if n not in ("typename", "class")]
            if names:
                params.append(names[-1])
        rest = text[end:text.find("{", end) if "{" in text[end:] else len(text)]
        rest = LAUNCH_BOUNDS.sub(" ", rest.split(";", 1)[0])
        named = TEMPLATE_CLASS.match(rest) or TEMPLATE_FUNCTION.search(rest)
        if params and named:
            found.append(Template(named.group(1), tuple(params),
                                  " ".join(text[match.start():end].split())))
    return found


def template_arguments(template: str) -> list[str]:
    """The arguments an instantiation writes, in order (``copy<{VEC}, 2>``: ``{VEC}``,
    ``2``)."""
    inner = template.split("<", 1)[1].rsplit(">", 1)[0] if "<" in template else ""
    return [a.strip() for a in _split_top(inner, ",") if a.strip()]


def instantiation(template: str, meta: Mapping[str, int]) -> str:
    """The template filled in with ``meta``'s values (``copy<4, 2>``)."""
    return template.format(**meta)


def nvrtc_options(meta: Mapping[str, int], block: int, dtype: str,
                  template: str | None = None) -> tuple[str, ...]:
    """The defines a config compiles with, sorted (the module's docstring lists them)."""
    in_template = set(template_names(template)) if template else set()
    defines = {n: str(v) for n, v in meta.items() if n not in in_template}
    for name in EXTENT_DEFINES:         # Kernel Tuner defines them at 1 where not swept
        if name not in meta:
            defines[name] = "1"
    defines[BLOCK_DEFINE] = str(block)
    defines[DTYPE_DEFINE] = C_TYPES[dtype]
    return tuple(f"-D{n}={v}" for n, v in sorted(defines.items()))


def included(text: str, code: str | None = None) -> list[str]:
    """The files ``text`` includes, in order: a quoted one as written (``x.h``), one in
    angle brackets with them (``<x.h>``, :func:`include_paths` tells them apart); those
    whose ``#include`` line ``code`` keeps (``text``'s :func:`active_code`, its line count
    kept; an ``#include`` inside a comment or a branch left out is none), or every one
    where ``code`` is ``None``."""
    kept = None if code is None else code.split("\n")
    return [m.group(1) or f"<{m.group(2)}>" for m in INCLUDE.finditer(text)
            if kept is None or kept[text.count("\n", 0, m.end())].strip()]


def include_paths(includer: Path, name: str, root: Path) -> tuple[Path, ...]:
    """Where NVRTC looks among the kernel's files, in order, for the file an
    ``#include`` of ``includer`` names (:func:`included`'s ``name``): a quoted one beside
    its includer, then in the source's folder ``root`` (the ``-I`` every compile passes,
    :func:`~sweeper.kernels._cuda_build.compiled`), so a header in a subfolder finds one
    beside the ``.cu`` file; one in angle brackets in ``root`` alone (found nowhere
    there, it is a system header)."""
    if name.startswith("<"):
        return ((root / name[1:-1]).resolve(),)
    beside = (includer.parent / name).resolve()
    found = (root / name).resolve()
    return (beside,) if found == beside else (beside, found)


def sources(path: Path, seen: tuple[Path, ...] = (), *, left_out: bool = False,
            root: Path | None = None) -> dict[Path, bytes]:
    """``path``'s bytes and those of every file its code includes, each
    resolved as NVRTC does (:func:`include_paths`: beside its includer, else in the
    source's folder ``root``, ``path``'s own where ``None``; a file found in neither is a
    system header and stays out); an ``OSError`` where ``path`` cannot be
    read.  An ``#include`` in a comment or in a branch no config compiles (``#if 0``:
    :func:`active_code`, which knows no defines here) brings nothing in, unless
    ``left_out`` (what a message may name)."""
    path = path.resolve()
    root = path.parent if root is None else root
    found = {path: path.read_bytes()}
    text = found[path].decode(errors="replace")
    for name in included(text, None if left_out else active_code(text)):
        file = next((f for f in include_paths(path, name, root) if f.is_file()), None)
        if file is not None and file not in (*seen, *found):
            found.update(sources(file, (*seen, path), left_out=left_out, root=root))
    return found


def absent_includes(files: Mapping[Path, bytes]) -> tuple[Path, ...]:
    """Where ``files`` (:func:`sources`'s, the source first) include a file
    that is not there, though NVRTC would look there before the file it includes now (or
    finds none: not written yet, or a system header): one written there later is
    included from then on (:func:`sources` reads it)."""
    absent: list[Path] = []
    root = next(iter(files)).parent
    for path, data in files.items():
        text = data.decode(errors="replace")
        for name in included(text, active_code(text)):
            for file in include_paths(path, name, root):
                if file in files or file.is_file():
                    break
                if file not in absent:
                    absent.append(file)
    return tuple(absent)


def read_includes(files: Mapping[Path, bytes]) -> list[str]:
    """The files besides the source that ``files`` (:func:`sources`'s, the source first)
    hold, as a study records them beside its source hash: each relative to the source's
    folder (``part.cuh``, ``../common/x.cuh``), so that they name the same files in the
    project moved, and :func:`unfound_includes` tells one of them gone from a header that
    hash never read."""
    root = next(iter(files)).parent
    return [os.path.relpath(path, root) for path in list(files)[1:]]


def unfound_includes(files: Mapping[Path, bytes], read: Collection[str]) -> tuple[Path, ...]:
    """Where ``files`` (:func:`sources`'s, the source first) include a file that NVRTC
    finds nowhere among the kernel's files now (:func:`include_paths`) and that a source
    hash read when it was taken (``read``: :func:`read_includes`'s, from that hash's
    study), each once: a file of the kernel's own moved, renamed or removed since.  A
    file that hash never read (a toolkit header NVRTC finds in its own folders, a file
    written nowhere) is not gone: the hash never held it, so it says nothing of why the
    hash differs now."""
    root, was = next(iter(files)).parent, set(read)
    out: list[Path] = []
    for path, data in files.items():
        text = data.decode(errors="replace")
        for name in included(text, active_code(text)):
            where = include_paths(path, name, root)
            if not any(f in files or f.is_file() for f in where):
                out += [f for f in where if os.path.relpath(f, root) in was and f not in out]
    return tuple(out)


def includes_now(source: Path) -> list[str]:
    """The files ``source`` includes, where found now (:func:`read_includes` of
    :func:`sources`' read): what a study of a kernel compiling it records beside its
    source hash; none where it cannot be read (no hash is taken)."""
    try:
        return read_includes(sources(source))
    except OSError:
        return []


def includes_gone(source: Path, read: Collection[str]) -> list[Path]:
    """The files ``source`` includes that its study's source hash read (``read``:
    :func:`includes_now` then) and that NVRTC finds nowhere now
    (:func:`unfound_includes`); none where ``source`` is no file or cannot be read (the
    caller names it), or the study recorded none (an older sweeper's)."""
    if not read or not source.is_file():
        return []
    try:
        return list(unfound_includes(sources(source), read))
    except OSError:                               # unreadable: no hash is told
        return []


def cache_key(files: Mapping[Path, bytes], entry: str, options: Sequence[str], arch: str,
              nvrtc: str) -> str:
    """What identifies one compiled kernel: the source and its includes (their contents
    and their names relative to the source), the entry, the options, the GPU arch and
    NVRTC's version, as a sha256."""
    digest = hashlib.sha256()
    root = next(iter(files)).parent
    for path, data in files.items():
        name = path.relative_to(root) if path.is_relative_to(root) else path
        digest.update(f"{name}\0{len(data)}\0".encode() + data)
    for part in (entry, *options, arch, nvrtc):
        digest.update(f"\1{part}".encode())
    return digest.hexdigest()
