"""The copied-on-access database: an episode's reads and writes never reach the parsed original."""

from __future__ import annotations

from pydantic import BaseModel

from testbed.scenarios.tau2.cow_db import CopyOnAccess, fresh_copy


class Record(BaseModel):
    tags: list[str]


class DB(BaseModel):
    records: dict[str, Record]
    version: list[int]


def pristine() -> DB:
    return DB(records={"a": Record(tags=["x"]), "b": Record(tags=["y"])}, version=[1])


def test_every_way_of_reading_a_value_gives_the_episode_its_own_copy():
    base = pristine()
    copy = fresh_copy(base)
    copy.records["a"].tags.append("by-key")
    copy.records.get("b").tags.append("by-get")
    for record in copy.records.values():
        record.tags.append("by-values")
    for _, record in copy.records.items():
        record.tags.append("by-items")
    copy.records["c"] = Record(tags=["new"])
    copy.version.append(2)
    assert base == pristine(), "the original is untouched"
    assert copy.records["a"].tags == ["x", "by-key", "by-values", "by-items"]
    assert copy.model_dump()["records"]["b"]["tags"] == ["y", "by-get", "by-values", "by-items"]
    assert sorted(copy.model_dump()["records"]) == ["a", "b", "c"]


def test_pop_and_setdefault_copy_too_and_untouched_records_serialise_as_the_original():
    base = pristine()
    copy = fresh_copy(base)
    popped = copy.records.pop("a")
    popped.tags.append("gone")
    copy.records.setdefault("b", Record(tags=[])).tags.append("kept")
    assert base == pristine() and "a" not in copy.records
    assert fresh_copy(base).model_dump() == base.model_dump()
    assert isinstance(fresh_copy(base).records, CopyOnAccess)
