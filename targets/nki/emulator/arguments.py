"""The arguments an emulated NKI function takes: the names its NKI API reference documents, and nothing else.

NKI's own functions accept `**kwargs`, and a Python function with `**_` silently drops whatever it does not
read: `nisa.nc_matmul(a, b, is_transpose=True)` or a misspelt `acumulate=` would run as if the argument
were absent, and the emulator would measure a kernel that means something else on a trn1. So:

- a keyword the function does not document is refused (NkiError naming the function, the argument and the
  names it takes): `refuse_unknown`;
- a documented argument whose effect the emulator does not model is refused as NotEmulated when it is given
  any value but its documented default: `refuse_unmodeled`;
- `checked` applies both to a function with an explicit signature (its parameters are the accepted names).

Pure labels (`name=`, "the name of the instruction/tensor, used in scheduling") are accepted where the
docs give them: they change no result.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Collection, Iterable, Mapping
from enum import Enum
from typing import Any, TypeVar

from speedpatch.targets.nki.emulator.errors import NkiError, NotEmulated

F = TypeVar("F", bound=Callable[..., Any])

# name -> (the values that mean "not used", the reason it is not emulated); the first value is the default
Unmodeled = Mapping[str, tuple[tuple[Any, ...], str]]


def refuse_unknown(what: str, given: Iterable[str], accepted: Collection[str]) -> None:
    """NkiError for the first keyword in `given` that is not one of `accepted`."""
    for key in given:
        if key not in accepted:
            raise NkiError(f"{what}: unknown keyword argument {key!r}; {what} takes "
                           f"{', '.join(accepted)} (its NKI API reference documents no {key!r})")


def _is_default(value: Any, defaults: tuple[Any, ...]) -> bool:
    plain = (int, float, str, tuple, list)
    for default in defaults:
        if value is default:
            return True
        # plain Python values only (a tile's == is an instruction); a bool only as itself (True == 1)
        if (type(value) in plain and type(default) in plain and not isinstance(value, bool)
                and not isinstance(default, bool) and value == default):
            return True
    return False


def refuse_unmodeled(what: str, bound: Mapping[str, Any], unmodeled: Unmodeled) -> None:
    """NotEmulated for a documented argument given with a value whose effect the emulator does not model."""
    for name, (defaults, why) in unmodeled.items():
        if name in bound and not _is_default(bound[name], defaults):
            raise NotEmulated(f"{what}({name}={_show(bound[name])}) is part of NKI but not of the speedpatch "
                              f"emulator ({why}); leave {name} at its default {_show(defaults[0])}")


def _show(value: Any) -> str:
    if isinstance(value, Enum):
        return f"{type(value).__name__}.{value.name}"
    return repr(value) if isinstance(value, (bool, int, float, str, tuple, list, type(None))) else type(value).__name__


def checked(what: str, unmodeled: Unmodeled | None = None) -> Callable[[F], F]:
    """Decorate a function (or method) with an explicit signature: an unknown keyword is an NkiError (not
    Python's TypeError) and a documented-but-unmodeled argument with a non-default value is NotEmulated."""

    def wrap(fn: F) -> F:
        signature = inspect.signature(fn)
        accepted = tuple(p.name for p in signature.parameters.values()
                         if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and p.name != "self")
        names = frozenset(accepted)

        @functools.wraps(fn)
        def call(*args: Any, **kwargs: Any) -> Any:
            for key in kwargs:
                if key not in names:
                    refuse_unknown(what, kwargs, accepted)
            if unmodeled:
                try:
                    bound = signature.bind_partial(*args, **kwargs).arguments
                except TypeError as exc:
                    raise NkiError(f"{what}: {exc}") from None
                refuse_unmodeled(what, bound, unmodeled)
            return fn(*args, **kwargs)

        call.accepted_arguments = accepted  # type: ignore[attr-defined]
        return call  # type: ignore[return-value]

    return wrap
