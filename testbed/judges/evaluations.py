"""The measured figures behind each judge: how well it agreed with reference labels, on which set.

A judge's labels are only as good as its agreement with people, so a report that uses a judge should
say what that agreement was measured as, on which labelled set, and whether the judge had seen that
set. Two sources feed it: `judges/evaluations.yaml`, the figures shipped with the testbed (README.md's
"Where it stands"), and the per-user records file that `testbed eval-judge ... --record` appends to
(`judge-evaluations.jsonl` under the testbed cache, `TESTBED_CACHE`, default ~/.cache/usersim-testbed).

The shipped file is part of the checkout: anything malformed in it is a SpecError naming the file and
line, since a wrong figure there would mislead every report. The records file is an append log that a
killed process may leave with a torn last line, so a corrupt record is skipped with a
`CorruptRecordWarning` naming the file and line, and the other records still count.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import warnings
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from testbed.specs.errors import SpecError, spec_error_from_validation
from testbed.specs.loader import builtin_dir, read_yaml
from testbed.store.records import JudgeIdentity

RECORDS_NAME = "judge-evaluations.jsonl"
"""The records file's name inside the testbed cache."""
SHA_PREFIX = 16
"""Hex digits of the labelled set's sha256 kept in a record: enough to tell two versions of a set apart."""
DEV_SET = "../shared/gold/dev.jsonl"
"""The labelled set a judge without figures is told to be scored on first."""
SELECTOR = re.compile(r"^(?P<judge>[^@:\s]+)@(?P<version>[^@:\s]+)(?::(?P<model>\S+))?$")
"""A judge identity selector: `name@version`, or `name@version:model` for one model only."""


class CorruptRecordWarning(UserWarning):
    """A line of the records file that is not a record: skipped, named by file and line."""


class JudgeFigure(BaseModel):
    """One measured agreement of a judge with reference labels on one labelled set."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    judge: str
    """The identity selector it was shipped under (`learned@learned-2`) or the identity recorded (`name@version:model`)."""
    labelled_set: str
    """The set's name (`gold dev`) for shipped figures, its path as given to eval-judge for recorded ones."""
    n: int = Field(ge=0)
    """Scored turns the figures are over (unscored turns excluded)."""
    kappa: float | None
    """Cohen's κ over the eight labels; None for a judge that gives only the binary verdict, or when nothing was scored."""
    followup_f1: float | None
    """F1 of the binary follow-up verdict; None when nothing was scored."""
    held_out: bool | None
    """True when the judge was never trained or tuned on the set; None when not stated (recorded figures)."""
    source: Literal["shipped", "recorded"]
    """`shipped` (judges/evaluations.yaml) or `recorded` (eval-judge --record on this machine)."""
    path: str | None = None
    """Where the labelled set lives, when it is a file."""
    sha256: str | None = None
    """Leading hex digits of the set file's sha256 when it was recorded."""
    unscored: int | None = None
    """Turns the judge gave no verdict on, when recorded."""
    date: str | None = None
    """When it was recorded (ISO 8601, UTC)."""
    note: str = ""
    """How the figure was made, when the set name does not say."""


class _Shipped(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    set: str = Field(min_length=1)
    path: str | None = None
    n: int = Field(ge=0)
    kappa: float | None = Field(ge=-1.0, le=1.0)
    followup_f1: float | None = Field(ge=0.0, le=1.0)
    held_out: bool
    note: str = ""


class _ShippedFile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    version: Literal[1]
    judges: dict[str, list[_Shipped]]

    @field_validator("judges")
    @classmethod
    def _selectors(cls, judges: dict[str, list[_Shipped]]) -> dict[str, list[_Shipped]]:
        bad = next((key for key in judges if not SELECTOR.match(key)), None)
        if bad is not None:
            raise ValueError(f"{bad!r} is not a judge selector | fix: write name@version or name@version:model")
        return judges


class _Record(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    judge: str
    name: str
    version: str
    model: str = ""
    agent: str | None = None
    labelled_set: str
    sha256: str
    n: int = Field(ge=0)
    kappa: float | None
    followup_f1: float | None
    unscored: int = Field(ge=0)
    date: str


def shipped_path() -> Path:
    """The shipped figures file, `judges/evaluations.yaml` (inside the wheel or at the checkout's top level)."""
    return builtin_dir("judges") / "evaluations.yaml"


def records_path() -> Path:
    """This user's records file: `judge-evaluations.jsonl` in the testbed cache (`TESTBED_CACHE`)."""
    from testbed.backends.model_prep import cache_root

    return cache_root() / RECORDS_NAME


def matches(selector: str, identity: JudgeIdentity) -> bool:
    """Whether a selector names this identity: same name, same version or the version before its `+digest`, and the
    same model when the selector names one. A retrained learned judge keeps its version name, not its digest."""
    found = SELECTOR.match(selector)
    if found is None:
        return False
    version_ok = found["version"] in (identity.version, identity.version.partition("+")[0])
    return found["judge"] == identity.judge and version_ok and found["model"] in (None, identity.model)


def shipped_figures(path: Path | None = None) -> dict[str, list[JudgeFigure]]:
    """The shipped figures per selector; a SpecError naming the file and line when the file is malformed."""
    path = path or shipped_path()
    data = read_yaml(path, what="judge evaluations file")
    try:
        parsed = _ShippedFile.model_validate(data)
    except ValidationError as exc:
        line = _line_of(path, exc.errors()[0]["loc"])
        raise spec_error_from_validation(f"{path}:{line}" if line else path, exc, _ShippedFile) from None
    return {selector: [JudgeFigure(judge=selector, labelled_set=f.set, n=f.n, kappa=f.kappa, followup_f1=f.followup_f1,
                                   held_out=f.held_out, source="shipped", path=f.path, note=f.note) for f in figures]
            for selector, figures in parsed.judges.items()}


def recorded_figures(path: Path | None = None) -> list[JudgeFigure]:
    """Every readable record, in file order; corrupt lines are skipped with a CorruptRecordWarning (file:line)."""
    path = path or records_path()
    return [_figure(record) for record in _records(path)]


def figures_for(identity: JudgeIdentity, *, shipped: Path | None = None, records: Path | None = None) -> list[JudgeFigure]:
    """The figures behind one judge identity: its recorded ones first, newest first and only the newest per labelled set
    (same path and sha256), then the shipped ones in file order. Records match the identity exactly (digest and model
    included); shipped figures match by selector."""
    mine = [f for f in recorded_figures(records) if f.judge == str(identity)]
    newest: dict[tuple[str, str | None], JudgeFigure] = {}
    for figure in sorted(mine, key=lambda f: f.date or "", reverse=True):
        newest.setdefault((figure.labelled_set, figure.sha256), figure)
    listed = [f for selector, figures in shipped_figures(shipped).items() if matches(selector, identity) for f in figures]
    return [*newest.values(), *listed]


def figures_line(identity: JudgeIdentity, *, shipped: Path | None = None, records: Path | None = None) -> str:
    """One line for a report: the identity and each labelled set behind it with n, κ and F1, or what to run when it has none."""
    figures = figures_for(identity, shipped=shipped, records=records)
    if figures:
        return f"{identity}: " + "; ".join(_describe(f) for f in figures)
    model = " --model AGENT" if identity.model else ""
    return (f"{identity}: no measured figures — run `testbed eval-judge {DEV_SET} --judge {identity.judge}{model} --record` "
            "before trusting it")


def record_evaluation(identity: JudgeIdentity, labelled_set: Path, *, n: int, kappa: float | None, followup_f1: float | None,
                      unscored: int, agent: str | None = None, path: Path | None = None) -> JudgeFigure:
    """Append one eval-judge result to the records file as one JSON line, and return it as a figure.

    The line is written with a single append of the whole line, so concurrent or killed writers leave at worst one torn
    line, which readers skip. NaN figures (nothing scored) are stored as null.
    """
    path = path or records_path()
    record = _Record(judge=str(identity), name=identity.judge, version=identity.version, model=identity.model, agent=agent,
                     labelled_set=str(labelled_set), sha256=file_sha256(labelled_set)[:SHA_PREFIX], n=n,
                     kappa=_finite(kappa), followup_f1=_finite(followup_f1), unscored=unscored,
                     date=datetime.now(timezone.utc).isoformat(timespec="seconds"))
    path.parent.mkdir(parents=True, exist_ok=True)
    line = (json.dumps(record.model_dump(), ensure_ascii=False) + "\n").encode()
    with path.open("ab") as handle:
        handle.write(line)
    return _figure(record)


def file_sha256(path: Path) -> str:
    """The sha256 of a file's bytes, read in chunks."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _records(path: Path) -> Iterator[_Record]:
    try:
        handle = path.open("rb")
    except FileNotFoundError:
        return
    except OSError as exc:
        warnings.warn(f"{path}: cannot read the judge evaluation records ({exc.strerror}); only shipped figures are shown",
                      CorruptRecordWarning, stacklevel=3)
        return
    with handle:
        for number, raw in enumerate(handle, 1):
            if not raw.strip():
                continue
            try:
                yield _Record.model_validate_json(raw)
            except ValidationError as exc:
                err = exc.errors()[0]
                where = ".".join(str(p) for p in err["loc"]) or "(line)"
                warnings.warn(f"{path}:{number}: not a judge evaluation record ({where}: {err['msg']}); skipped",
                              CorruptRecordWarning, stacklevel=3)


def _figure(record: _Record) -> JudgeFigure:
    return JudgeFigure(judge=record.judge, labelled_set=record.labelled_set, n=record.n, kappa=record.kappa,
                       followup_f1=record.followup_f1, held_out=None, source="recorded", path=record.labelled_set,
                       sha256=record.sha256, unscored=record.unscored, date=record.date)


def _describe(figure: JudgeFigure) -> str:
    details = [str(figure.n)]
    if figure.held_out is not None:
        details.append("held out" if figure.held_out else "not held out")
    if figure.unscored:
        details.append(f"{figure.unscored} unscored")
    if figure.source == "recorded":
        details.append(f"recorded {(figure.date or '?')[:10]}, sha256 {(figure.sha256 or '?')[:8]}")
    kappa = "" if figure.kappa is None else f"κ {_number(figure.kappa, figure.source)} / "
    return f"{figure.labelled_set} ({', '.join(details)}) {kappa}F1 {_number(figure.followup_f1, figure.source)}"


def _number(value: float | None, source: str) -> str:
    """Shipped figures as the README gives them (0.72 stays 0.72), recorded ones to three places."""
    if value is None:
        return "n/a"
    return f"{value:g}" if source == "shipped" else f"{value:.3f}"


def _finite(value: float | None) -> float | None:
    return None if value is None or not math.isfinite(value) else float(value)


def _line_of(path: Path, loc: tuple) -> int | None:
    """The 1-based line of the YAML node at a pydantic error location, or of the nearest node above it."""
    try:
        node = yaml.compose(path.read_text(encoding="utf-8"), Loader=yaml.SafeLoader)
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return None
    line = node.start_mark.line + 1 if node is not None else None
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            node = next((value for key, value in node.value if key.value == str(part)), None)
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
            node = node.value[part]
        else:
            node = None
        if node is None:
            return line
        line = node.start_mark.line + 1
    return line
