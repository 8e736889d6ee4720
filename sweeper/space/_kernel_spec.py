"""The ``kernel:`` key: a kernel's name, or a mapping of its name and the options it
declares (``kernel: {name: torch-op, op: torch.nn.functional.gelu}``).

An option says *which* computation a kernel runs, so it belongs with the kernel's name,
not among the axes (it is never swept) nor at the top of the file (where it would mean
nothing to the other kernels)."""

from __future__ import annotations

from typing import Any

from sweeper.errors import SpaceError
from sweeper.space._model import KernelDeclaration
from sweeper.space._settings import shown

#: A kernel option's value: a short string, checked by the kernel's declaration.
MAX_OPTION = 200


class KernelSpec:
    """Parser mixin: splits ``kernel:`` into a name and options, each option checked
    against what the kernel declares, before anything of the kernel runs."""

    user_code: bool

    def error(self, path: str, message: str) -> SpaceError:
        """The parser's located error (``_Parser.error``)."""
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
        for key, option in given.items():
            path = f"kernel.{key}"
            if key not in declared:
                known = ", ".join(declared) if declared else "none (give just its name)"
                raise self.error(path, f"kernel {kernel.name} takes no option {shown(key)}; "
                                 f"its options: {known}")
            if not isinstance(option, str) or not 0 < len(option) <= MAX_OPTION:
                raise self.error(path, f"{shown(option)} is not a valid {key}; allowed: "
                                 f"a string of 1 to {MAX_OPTION} characters ({declared[key]})")
            problem = kernel.option_problem(key, option, imports=self.user_code)
            if problem is not None:
                raise self.error(path, problem)
        defaults = dict(getattr(kernel, "option_defaults", {}))
        missing = [k for k in declared if k not in given and k not in defaults]
        if missing:
            raise self.error("kernel", f"kernel {kernel.name} needs option {missing[0]!r} "
                             f"({declared[missing[0]]}): kernel: {{name: {kernel.name}, "
                             f"{missing[0]}: ...}}")
        return tuple(sorted({**{k: v for k, v in defaults.items() if k in declared},
                             **given}.items()))
