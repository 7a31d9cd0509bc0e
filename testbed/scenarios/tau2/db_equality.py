"""Whether two τ² databases are equal, decided from the records either side touched: τ²'s verdict without its hashes.

τ²'s evaluator compares a database with the expected one by `sha256(json.dumps(db.model_dump(),
sort_keys=True, default=str))`, which serialises every record of both (two thirds of a second of
CPU per airline episode). Two databases that start from the same parsed one
(`testbed.scenarios.tau2.cow_db`) still hold the very same record objects wherever neither side
touched a record, and the same object serialises to the same text. So only the records that differ
by identity are serialised, with the database model's own serialiser and τ²'s `json.dumps`
settings, and compared as text: with sorted keys a database's text is its fields' texts in order,
and a dict field's text is its keys' and records' texts, so equal parts make equal wholes and a
differing part a differing whole. The verdict is τ²'s (a hash collision aside), checked against it
by tests/scenarios/tau2/test_db_equality.py.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel


def _text(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def _dumped_field(db: BaseModel, name: str, value: Any) -> Any:
    """`value` serialised as field `name` of `db`'s model serialises it (the field's own types and settings)."""
    return type(db).model_construct(**{name: value}).model_dump(include={name})[name]


def _all_str(keys: Any) -> bool:
    return all(type(k) is str for k in keys)


def _same_dict_field(a: BaseModel, b: BaseModel, name: str, left: dict, right: dict) -> bool:
    keys = dict.keys(left)
    if keys != dict.keys(right):
        if _all_str(keys) and _all_str(dict.keys(right)):
            return False
        return _text(_dumped_field(a, name, left)) == _text(_dumped_field(b, name, right))
    differing = [k for k in keys if dict.__getitem__(left, k) is not dict.__getitem__(right, k)]
    if not differing:
        return True
    mine = _dumped_field(a, name, {k: dict.__getitem__(left, k) for k in differing})
    theirs = _dumped_field(b, name, {k: dict.__getitem__(right, k) for k in differing})
    return all(_text(mine[k]) == _text(theirs[k]) for k in mine)


def _serialised_in_parts(model: type[BaseModel]) -> bool:
    """Whether the model's text is its fields' texts: no computed fields and no serialiser over the whole model."""
    decorators = model.__pydantic_decorators__
    return not model.model_computed_fields and not decorators.model_serializers


def _field_serialised_whole(model: type[BaseModel], name: str) -> bool:
    return any(name in d.info.fields or "*" in d.info.fields for d in model.__pydantic_decorators__.field_serializers.values())


def same_database(a: BaseModel | None, b: BaseModel | None) -> bool:
    """Whether τ²'s `get_db_hash` would give `a` and `b` the same hash (both None: equal, as τ²'s None == None).

    Records held by both as the same object are not serialised; any other part is, with the model's serialiser. A model
    whose text is not made of its fields' (computed fields, a serialiser of its own) is compared whole, as τ² does."""
    if a is None or b is None:
        return a is b
    if type(a) is not type(b) or not _serialised_in_parts(type(a)):
        return _text(a.model_dump()) == _text(b.model_dump())
    for name in type(a).model_fields:
        left, right = getattr(a, name), getattr(b, name)
        if left is right:
            continue
        if isinstance(left, dict) and isinstance(right, dict) and not _field_serialised_whole(type(a), name):
            if not _same_dict_field(a, b, name, left, right):
                return False
        elif _text(_dumped_field(a, name, left)) != _text(_dumped_field(b, name, right)):
            return False
    return True
