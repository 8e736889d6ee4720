"""The ``kernel:`` key: a kernel's name, or a mapping of its name and the options it
declares (``kernel: {name: torch-op, op: torch.nn.functional.gelu}``).

An option says *which* computation a kernel runs, so it belongs with the kernel's name,
not among the axes (it is never swept) nor at the top of the file (where it would mean
nothing to the other kernels)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sweeper.core._model import KernelDeclaration, Origin
from sweeper.errors import SpaceError, SweeperError
from sweeper.space._settings import shown

#: A kernel option's value: a short string, checked by the kernel's declaration.
MAX_OPTION = 200
#: A mapping or list as an option's value (``inputs: {src: n}``), kept as its JSON text.
MAX_STRUCTURED = 2000


class KernelSpec:
    """Parser mixin: splits ``kernel:`` into a name and options, each option checked
    against what the kernel declares, before anything of the kernel runs."""

    user_code: bool

    def error(self, path: str, message: str) -> SpaceError:
        """The parser's located error (``_Parser.error``)."""
        raise NotImplementedError

    def origin(self, path: str) -> Origin:
        """Where ``path`` was written (``_Parser.origin``)."""
        raise NotImplementedError

    def kernel_name(self, value: Any) -> Any:
        """The name ``kernel:`` gives, whether plain or in a mapping."""
        if isinstance(value, dict):
            if "name" not in value:
                raise self.error("kernel", "a kernel mapping needs a name: "
                                 "{name: KERNEL, OPTION: value, ...}")
            return value["name"]
        return value

    def kernel_options(self, value: Any, kernel: type[KernelDeclaration]
                       ) -> tuple[tuple[str, str], ...]:
        """The options ``kernel:`` gives ``kernel`` (``()`` for a plain name), each a
        string the kernel declares and accepts (with ``user_code``, checked by importing
        what it names); every declared option must be given unless the kernel
        declares a default for it (``option_defaults``), which then stands in."""
        given = {k: v for k, v in value.items() if k != "name"} \
            if isinstance(value, dict) else {}
        declared = dict(getattr(kernel, "options", {}))
        for key, raw in given.items():
            path = f"kernel.{key}"
            if key not in declared:
                known = ", ".join(declared) if declared else "none (give just its name)"
                raise self.error(path, f"kernel {kernel.name} takes no option {shown(key)}; "
                                 f"its options: {known}")
            option = json.dumps(raw) if isinstance(raw, (dict, list)) else raw
            limit = MAX_STRUCTURED if isinstance(raw, (dict, list)) else MAX_OPTION
            if not isinstance(option, str) or not 0 < len(option) <= limit:
                raise self.error(path, f"{shown(raw)} is not a valid {key}; allowed: a "
                                 f"string of 1 to {MAX_OPTION} characters, or a mapping or "
                                 f"list of up to {MAX_STRUCTURED} ({declared[key]})")
            resolve = getattr(kernel, "resolve_option", lambda key, value, folder: value)
            option = resolve(key, option, Path(self.origin(path).file).parent)
            problem = kernel.option_problem(key, option, imports=self.user_code)
            if problem is not None:
                raise self.error(path, problem)
            given[key] = option
        defaults = dict(getattr(kernel, "option_defaults", {}))
        missing = [k for k in declared if k not in given and k not in defaults
                   and k not in getattr(kernel, "optional_options", ())]
        if missing:
            raise self.error("kernel", f"kernel {kernel.name} needs option {missing[0]!r} "
                             f"({declared[missing[0]]}): kernel: {{name: {kernel.name}, "
                             f"{missing[0]}: ...}}")
        return tuple(sorted({**{k: v for k, v in defaults.items() if k in declared},
                             **given}.items()))

    def declared_kernel(self, value: Any, kernel: type[KernelDeclaration], params: Any
                        ) -> tuple[tuple[tuple[str, str], ...], type[KernelDeclaration]]:
        """The options ``kernel:`` gives (:meth:`kernel_options`) and the declaration the
        kernel makes of them and the space's ``params`` (``Kernel.specialize``), its error
        located at the option it names."""
        options = self.kernel_options(value, kernel)
        specialize = getattr(kernel, "specialize", None)
        if specialize is None:
            return options, kernel
        try:
            return options, specialize(dict(options), params)
        except SweeperError as err:
            key = getattr(err, "key", None)
            raise self.error(f"kernel.{key}" if key else "kernel", str(err)) from None
