"""The role vocabulary reads a message's role in every form the testbed handles, and keeps the stored strings."""

from __future__ import annotations

import sqlite3

import pandas as pd

from testbed.transcript import ASSISTANT, SPOKEN_ROLES, SYSTEM, TOOL, USER, Message, is_assistant, is_system, is_tool, is_user


def test_the_constants_are_the_stored_strings():
    assert (USER, ASSISTANT, SYSTEM, TOOL) == ("user", "assistant", "system", "tool") and SPOKEN_ROLES == (USER, ASSISTANT)


def test_each_predicate_reads_a_message_a_row_a_dict_and_a_frame_row():
    conn = sqlite3.connect(":memory:")
    conn.row_factory = sqlite3.Row
    row = conn.execute("SELECT 'tool' AS role").fetchone()
    forms = [Message("user", "hi", "u", 0), {"role": "assistant"}, row, pd.Series({"role": "system"})]
    assert [(is_user(m), is_assistant(m), is_system(m), is_tool(m)) for m in forms] == [
        (True, False, False, False), (False, True, False, False), (False, False, False, True), (False, False, True, False)]
