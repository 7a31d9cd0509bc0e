"""The SQLite schema of the store; `SCHEMA_VERSION` changes whenever a table does."""

import re

SCHEMA_VERSION = 8
UPGRADABLE_FROM = (1, 2, 3, 4, 5, 6, 7)
"""Older versions whose tables are a subset of this one: opening them adds the new tables (version 6 adds
`fault_reviews`, version 7 `user_faults` and `user_fault_checks`, version 8 `turn_reviews`), and `MESSAGES_V5` rebuilds a version 1-4 messages table (a CHECK constraint cannot be altered in place)."""

DDL = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY,
    scenario TEXT NOT NULL,
    kind TEXT NOT NULL,
    spec_json TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    versions_json TEXT NOT NULL,
    git_revision TEXT,
    started_at TEXT NOT NULL,
    finished_at TEXT,
    status TEXT NOT NULL,
    planned_episodes INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS episodes (
    run_id TEXT NOT NULL REFERENCES runs(run_id),
    episode_id TEXT NOT NULL,
    item_id TEXT NOT NULL,
    dataset TEXT NOT NULL,
    assistant_agent TEXT NOT NULL,
    assistant_model TEXT NOT NULL,
    user_agent TEXT NOT NULL,
    user_model TEXT NOT NULL,
    user_mode TEXT NOT NULL,
    temperature REAL NOT NULL,
    sample_index INTEGER NOT NULL,
    perturbation TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('done', 'error')),
    termination TEXT,
    error_reason TEXT,
    task_score REAL,
    prompt_tokens INTEGER NOT NULL DEFAULT 0,
    completion_tokens INTEGER NOT NULL DEFAULT 0,
    latency_s REAL NOT NULL DEFAULT 0,
    finished_at TEXT NOT NULL,
    PRIMARY KEY (run_id, episode_id)
);
CREATE TABLE IF NOT EXISTS messages (
    run_id TEXT NOT NULL,
    episode_id TEXT NOT NULL,
    turn_index INTEGER NOT NULL,
    role TEXT NOT NULL CHECK (role IN ('system', 'user', 'assistant', 'tool')),
    speaker TEXT NOT NULL,
    content TEXT NOT NULL,
    sampling_json TEXT,
    prompt_tokens INTEGER NOT NULL DEFAULT 0,
    completion_tokens INTEGER NOT NULL DEFAULT 0,
    latency_s REAL NOT NULL DEFAULT 0,
    finish_reason TEXT,
    reused_from TEXT,
    tool_calls_json TEXT,
    tool_result_json TEXT,
    PRIMARY KEY (run_id, episode_id, turn_index),
    FOREIGN KEY (run_id, episode_id) REFERENCES episodes(run_id, episode_id) ON DELETE CASCADE
);
CREATE TABLE IF NOT EXISTS episode_rewards (
    run_id TEXT NOT NULL,
    episode_id TEXT NOT NULL,
    reward REAL NOT NULL,
    breakdown_json TEXT NOT NULL,
    details_json TEXT NOT NULL,
    PRIMARY KEY (run_id, episode_id),
    FOREIGN KEY (run_id, episode_id) REFERENCES episodes(run_id, episode_id) ON DELETE CASCADE
);
CREATE TABLE IF NOT EXISTS shared_answers (
    run_id TEXT NOT NULL,
    answer_id TEXT NOT NULL,
    item_id TEXT NOT NULL,
    content TEXT NOT NULL,
    task_score REAL,
    sampling_json TEXT,
    prompt_tokens INTEGER NOT NULL DEFAULT 0,
    completion_tokens INTEGER NOT NULL DEFAULT 0,
    latency_s REAL NOT NULL DEFAULT 0,
    finish_reason TEXT,
    PRIMARY KEY (run_id, answer_id)
);
CREATE TABLE IF NOT EXISTS labels (
    label_id INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL,
    episode_id TEXT NOT NULL,
    turn_index INTEGER NOT NULL,
    judge TEXT NOT NULL,
    judge_version TEXT NOT NULL,
    model TEXT NOT NULL DEFAULT '',
    status TEXT NOT NULL CHECK (status IN ('scored', 'unscored')),
    label TEXT,
    followup INTEGER,
    reason TEXT,
    raw TEXT,
    attempts INTEGER NOT NULL DEFAULT 1,
    created_at TEXT NOT NULL,
    CHECK ((status = 'scored') = (label IS NOT NULL OR followup IS NOT NULL))
);
CREATE TABLE IF NOT EXISTS fault_reviews (
    review_id INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL,
    episode_id TEXT NOT NULL,
    turn_index INTEGER NOT NULL,
    kind TEXT NOT NULL,
    evidence TEXT NOT NULL,
    reviewer TEXT NOT NULL,
    reviewer_version TEXT NOT NULL,
    model TEXT NOT NULL DEFAULT '',
    verdict TEXT CHECK (verdict IS NULL OR verdict IN ('hindered', 'harmless')),
    reason TEXT,
    raw TEXT,
    attempts INTEGER NOT NULL DEFAULT 1,
    created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS turn_reviews (
    review_id INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL,
    episode_id TEXT NOT NULL,
    turn_index INTEGER NOT NULL,
    reviewer TEXT NOT NULL,
    reviewer_version TEXT NOT NULL,
    model TEXT NOT NULL DEFAULT '',
    status TEXT NOT NULL CHECK (status IN ('scored', 'unscored')),
    tags TEXT NOT NULL DEFAULT '[]',
    severity TEXT,
    reason TEXT,
    raw TEXT,
    attempts INTEGER NOT NULL DEFAULT 1,
    created_at TEXT NOT NULL,
    CHECK (status = 'scored' OR (severity IS NULL AND tags = '[]')),
    CHECK ((severity IS NULL) = (tags = '[]'))
);
CREATE TABLE IF NOT EXISTS user_faults (
    run_id TEXT NOT NULL,
    episode_id TEXT NOT NULL,
    turn_index INTEGER NOT NULL,
    kind TEXT NOT NULL,
    evidence TEXT NOT NULL,
    detector TEXT NOT NULL,
    detector_version TEXT NOT NULL,
    model TEXT NOT NULL DEFAULT '',
    judged INTEGER NOT NULL DEFAULT 0 CHECK (judged IN (0, 1))
);
CREATE TABLE IF NOT EXISTS user_fault_checks (
    run_id TEXT NOT NULL,
    episode_id TEXT NOT NULL,
    detector TEXT NOT NULL,
    detector_version TEXT NOT NULL,
    model TEXT NOT NULL DEFAULT '',
    judged INTEGER NOT NULL DEFAULT 0 CHECK (judged IN (0, 1)),
    checked_at TEXT NOT NULL,
    PRIMARY KEY (run_id, episode_id, judged, detector, detector_version, model)
);
CREATE TABLE IF NOT EXISTS run_leases (
    run_id TEXT PRIMARY KEY,
    token TEXT NOT NULL,
    pid INTEGER NOT NULL,
    host TEXT NOT NULL,
    pid_started TEXT,
    acquired_at REAL NOT NULL,
    heartbeat_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS failed_attempts (
    attempt_id INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL,
    episode_id TEXT NOT NULL,
    attempt INTEGER NOT NULL,
    termination TEXT,
    error_reason TEXT,
    messages INTEGER NOT NULL DEFAULT 0,
    finished_at TEXT NOT NULL,
    UNIQUE (run_id, episode_id, attempt)
);
CREATE TABLE IF NOT EXISTS run_frameworks (
    run_id TEXT PRIMARY KEY,
    framework TEXT NOT NULL,
    wall_s REAL NOT NULL DEFAULT 0,
    client_cpu_s REAL NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS wire_requests (
    run_id TEXT NOT NULL,
    episode_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    role TEXT NOT NULL,
    turn_index INTEGER,
    path TEXT NOT NULL,
    request_json TEXT NOT NULL,
    status INTEGER NOT NULL,
    response_json TEXT NOT NULL,
    prompt_tokens INTEGER,
    completion_tokens INTEGER,
    latency_s REAL NOT NULL,
    sent_at REAL NOT NULL,
    PRIMARY KEY (run_id, episode_id, seq)
);
CREATE TABLE IF NOT EXISTS replica_requests (
    run_id TEXT NOT NULL,
    agent TEXT NOT NULL,
    url TEXT NOT NULL,
    served INTEGER NOT NULL DEFAULT 0,
    retried INTEGER NOT NULL DEFAULT 0,
    out_reason TEXT,
    PRIMARY KEY (run_id, agent, url)
);
CREATE INDEX IF NOT EXISTS episodes_by_run ON episodes(run_id, status);
CREATE INDEX IF NOT EXISTS labels_by_judge ON labels(run_id, judge, judge_version, model, episode_id, turn_index);
CREATE INDEX IF NOT EXISTS fault_reviews_by_reviewer
    ON fault_reviews(run_id, reviewer, reviewer_version, model, episode_id, turn_index, kind);
CREATE INDEX IF NOT EXISTS turn_reviews_by_reviewer
    ON turn_reviews(run_id, reviewer, reviewer_version, model, episode_id, turn_index);
CREATE INDEX IF NOT EXISTS user_faults_by_run ON user_faults(run_id, judged, detector, episode_id, turn_index);
"""

TABLES = frozenset(re.findall(r"CREATE TABLE IF NOT EXISTS (\w+)", DDL))
"""Every table of the schema: a writable store missing one (an early build of this version) gets it on open."""

MESSAGES_V5 = """
ALTER TABLE messages RENAME TO messages_before_v5;
{create}
INSERT INTO messages SELECT *, NULL, NULL FROM messages_before_v5;
DROP TABLE messages_before_v5;
"""
"""Rebuilds a version 1-4 messages table as version 5's (the `tool` role, tool calls and results), rows kept."""


def messages_upgrade() -> str:
    """The script that brings an older messages table to version 5."""
    create = re.search(r"CREATE TABLE IF NOT EXISTS messages \(.*?\n\);", DDL, re.S).group(0)
    return MESSAGES_V5.format(create=create)
