"""The fault detectors' measured error on the gold set's held-out part, read from `judges/faults-gold/error-rates.json`.

`benchmarks/fault_gold.py rates` writes it: per detector identity (`tau2-user-rules@N`, `user-review@<prompt>:<model>`),
the held-out episodes and, per measure, the episode-level counts against the settled human labels. A measure is `any`
(the episode has an error), `critical_hindered` or `critical_helped` (an error of that severity). Each entry becomes a
`JudgeErrorRates`, the counts the follow-up rates are corrected with, so a fault share is corrected the same way.
"""

from __future__ import annotations

import json
from pathlib import Path

from testbed.analysis.judge_quality.correction import COUNTS, BadErrorRates, JudgeErrorRates

ERROR_RATES_PATH = Path(__file__).resolve().parents[3] / "judges" / "faults-gold" / "error-rates.json"
"""Where the gold set's script writes the detectors' measured error."""
MEASURES = ("any", "critical_hindered", "critical_helped")
"""What an episode-level count is of: any error, a critical_hindered one, a critical_helped one."""

DetectorErrors = dict[str, dict[str, JudgeErrorRates]]
"""Detector identity -> measure -> its counts."""


def load_detector_errors(path: Path | str = ERROR_RATES_PATH) -> DetectorErrors:
    """Every detector's measured error in the file; empty when the file is absent (no detector measured yet).
    BadErrorRates naming the file and the field (`detectors.<identity>.<measure>.<count>`) when it is malformed."""
    path = Path(path)
    if not path.exists():
        return {}
    try:
        blob = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise BadErrorRates(path, "(file)", exc) from None
    detectors = blob.get("detectors") if isinstance(blob, dict) else None
    if not isinstance(detectors, dict):
        raise BadErrorRates(path, "detectors", TypeError('no "detectors" object mapping each identity to its counts'))
    return {identity: _entry(path, identity, entry) for identity, entry in detectors.items()}


def _entry(path: Path, identity: str, entry) -> dict[str, JudgeErrorRates]:
    where = f"detectors.{identity}"
    if not isinstance(entry, dict):
        raise BadErrorRates(path, where, TypeError(f"{where}: a {type(entry).__name__}, not an object of counts"))
    source = f"{path.name} ({entry.get('split', 'unknown split')}, {entry.get('episodes', '?')} episodes)"
    out = {}
    for measure in MEASURES:
        if measure not in entry:
            continue
        counts = entry[measure]
        if not isinstance(counts, dict):
            raise BadErrorRates(path, f"{where}.{measure}", TypeError(f"{where}.{measure}: not an object of the four counts"))
        values = []
        for name in COUNTS:
            field = f"{where}.{measure}.{name}"
            value = counts.get(name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise BadErrorRates(path, field, ValueError(f"{field}: {value!r} is not a count"))
            values.append(value)
        out[measure] = JudgeErrorRates(*values, source)
    return out


def detector_error(errors: DetectorErrors, identity: str, measure: str) -> JudgeErrorRates | None:
    """The counts measured for `identity` on `measure`; None when that detector or measure was not measured."""
    return errors.get(identity, {}).get(measure)
