"""The engine's public face and the store say what each of their public functions does (issue #17)."""

from __future__ import annotations

import inspect

from speedpatch import api
from speedpatch.store import RunRecord, Store


def undocumented(members: dict[str, object]) -> list[str]:
    return sorted(name for name, member in members.items()
                  if not name.startswith("_") and (callable(member) or isinstance(member, property))
                  and not inspect.getdoc(member))


def test_every_public_function_of_the_api_has_a_docstring():
    defined_here = {name: f for name, f in vars(api).items()
                    if inspect.isfunction(f) and f.__module__ == api.__name__}
    assert defined_here and undocumented(defined_here) == []


def test_every_public_method_of_the_store_and_its_record_has_a_docstring():
    for cls in (Store, RunRecord):
        members = {name: getattr(cls, name) for name, value in vars(cls).items()
                   if inspect.isfunction(value) or isinstance(value, property)}
        assert inspect.getdoc(cls) and undocumented(members) == [], cls.__name__
