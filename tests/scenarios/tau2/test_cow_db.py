"""The copied-on-access database: an episode's reads and writes never reach the parsed original."""

from __future__ import annotations

import inspect
import json

import pytest
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


def read_calls(name: str) -> list[tuple[str, dict]]:
    """Every read-only tool call among the domain's expected actions, and each read-only tool without arguments."""
    from testbed.scenarios.tau2.cow_db import read_tools
    from testbed.scenarios.tau2.domains import domain

    d = domain(name)
    reads = read_tools(type(d.new_environment().tools))
    calls = {(a.name, json.dumps(a.arguments, sort_keys=True)) for t in d.tasks.values() if t.evaluation_criteria
             for a in t.evaluation_criteria.actions or [] if a.name in reads}
    toolkit = type(d.new_environment().tools)
    calls |= {(r, "{}") for r in reads if len(inspect.signature(getattr(toolkit, r)).parameters) == 1}
    return [(n, json.loads(a)) for n, a in sorted(calls)]


@pytest.mark.parametrize("name", ["mock", "airline", "retail"])
def test_read_only_tools_answer_as_a_fresh_database_and_leave_the_parsed_one_unchanged(name):
    import importlib

    from tau2.data_model.message import ToolCall

    from testbed.scenarios.tau2.domains import domain

    d = domain(name)
    fresh = importlib.import_module(f"tau2.domains.{name}.environment").get_environment()
    before = d.new_environment().get_db_hash()
    calls = read_calls(name)
    assert len(calls) >= (1 if name == "mock" else 10)
    ours = d.new_environment()
    for i, (tool, arguments) in enumerate(calls):
        call = ToolCall(id=f"r{i}", name=tool, arguments=arguments, requestor="assistant")
        assert ours.get_response(call).content == fresh.get_response(call).content, (tool, arguments)
    assert d.new_environment().get_db_hash() == before == ours.get_db_hash() == fresh.get_db_hash()


def test_a_flight_search_copies_no_record_and_a_write_after_a_read_still_copies():
    from tau2.data_model.message import ToolCall

    from testbed.scenarios.tau2.domains import domain

    d = domain("airline")
    env = d.new_environment()
    flight, date = next((f, day) for f in env.tools.db.flights.values() for day, s in f.dates.items() if s.status == "available")
    env = d.new_environment()
    search = {"origin": flight.origin, "destination": flight.destination, "date": date}
    answer = env.get_response(ToolCall(id="s", name="search_direct_flight", arguments=search, requestor="assistant"))
    assert flight.flight_number in answer.content
    assert not env.tools.db.flights._copied, "a search reads the flights without copying them"
    user = next(u for u in env.tools.db.users.values() if u.payment_methods)
    env.tools.db.users._copied.clear()
    env.get_response(ToolCall(id="u", name="get_user_details", arguments={"user_id": user.user_id}, requestor="assistant"))
    gift = env.get_response(ToolCall(id="g", name="send_certificate", arguments={"user_id": user.user_id, "amount": 50},
                                     requestor="assistant"))
    assert not gift.error and user.user_id in env.tools.db.users._copied
    assert d.new_environment().get_db_hash() != env.get_db_hash() and d.new_environment().tools.db == d.new_environment().tools.db
