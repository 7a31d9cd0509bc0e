"""Does the testbed stay fast at study size? Plan, run, judge and report N episodes on a mock server.

A study of a dozen models × five datasets × five temperatures × three perturbations with several
samples is hundreds of thousands of conversations. `--shape sweep` (the default) builds exactly
that sweep: 12 agents (one mock model each) × GSM8K, IFEval, IFBench, GPQA-diamond, HealthBench ×
2 user modes × 3 perturbations × 5 temperatures × items × samples, 1,800 report rows; `--shape
probe` is one GSM8K probe (2 modes × 4 perturbations × 5 temperatures × 2 samples per item, 40
rows). Items are as many as `--episodes` needs. The agents talk to the mock OpenAI server
(`benchmarks/mock_openai.py`, no latency, so what is measured is the testbed's own cost), and each
phase runs in its own process, the way a researcher runs them:

- plan: loading the spec and building the episode plan (`testbed.running.runner.plan`, per sweep cell);
- run: `testbed run SPEC --no-judge --no-report`;
- judge: `testbed judge RUN --judge local`;
- report: `testbed report RUN` (the tables).

Each phase's peak RSS is its process's own (`os.wait4`), so phases do not mask each other. Prints
a table and one JSON line. Absolute times depend on the machine and on what else runs on it.

    .venv/bin/python benchmarks/size.py                       # about 2,000 episodes, a quick look
    .venv/bin/python benchmarks/size.py --episodes 100000     # study size
    .venv/bin/python benchmarks/size.py --episodes 100000 --store /tmp/size.sqlite --skip-run   # re-time plan and report
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
PROMPT = str(REPO / "scenarios" / "prompts" / "user-instructed.md")
USER_MODES = ["raw", "instructed"]
TEMPERATURES = [0.0, 0.25, 0.5, 0.75, 1.0]
PROBE_PERTURBATIONS = ["none", "truncation", "explicit_question", {"kind": "truncation", "fraction": 0.25}]
SWEEP_PERTURBATIONS = ["none", "truncation", "explicit_question"]
SWEEP_AGENTS = 12
DATASET_ITEMS = {"gsm8k": 1319, "ifeval": 541, "ifbench": 300, "gpqa_diamond": 198, "healthbench": 500}
SAMPLES = 2

PLAN_SNIPPET = """
import sys
from testbed.running.runner import plan
from testbed.specs.sweep import find_sweep, load_sweep
from testbed.specs.loader import load_scenario
path = find_sweep(sys.argv[1])
cells = load_sweep(path).cells if path is not None else [load_scenario(sys.argv[1])]
print(sum(len(v) for c in cells for _, v in plan(c)))
"""


def timed(cmd: list[str], *, env: dict | None = None, stdout=subprocess.DEVNULL) -> dict:
    """Run a command to its end; its wall time, its own peak RSS (MiB) and exit status. A failure stops the benchmark."""
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=stdout, stderr=subprocess.PIPE, env=env, cwd=REPO)
    stderr = proc.stderr.read() if proc.stderr else b""
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{stderr.decode(errors='replace')[-3000:]}")
    return {"wall_s": round(wall, 2), "peak_rss_mib": round(usage.ru_maxrss / 1024, 1)}


def agent_names(shape: str) -> list[str]:
    """The mock models the spec's agents name (each agent its own, as in a study of several models)."""
    return ["mock"] if shape == "probe" else [f"mock-{i:02d}" for i in range(1, SWEEP_AGENTS + 1)]


def start_mock(folder: Path, models: list[str]) -> tuple[subprocess.Popen, str]:
    """The mock server in its own process, serving every model and answering at once; its base URL."""
    port_file = folder / "port.json"
    proc = subprocess.Popen([sys.executable, str(REPO / "benchmarks" / "mock_openai.py"), "--port-file", str(port_file),
                             "--latency-ms", "0", "--reply-words", "12", "--model", ",".join(models)], stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while not port_file.is_file() or not port_file.read_text().strip():
        if time.monotonic() > deadline or proc.poll() is not None:
            proc.kill()
            raise SystemExit("the mock server did not start")
        time.sleep(0.1)
    return proc, f"http://127.0.0.1:{json.loads(port_file.read_text())['port']}/v1"


def write_spec(folder: Path, base_url: str, episodes: int, concurrency: int, shape: str) -> Path:
    """The spec (a sweep or a probe) and its agents, pointing at the mock server; as many items as `episodes` needs."""
    per_item = len(USER_MODES) * len(TEMPERATURES) * SAMPLES * (
        len(PROBE_PERTURBATIONS) if shape == "probe" else len(SWEEP_PERTURBATIONS) * SWEEP_AGENTS * len(DATASET_ITEMS))
    items = math.ceil(episodes / per_item)
    most = DATASET_ITEMS["gsm8k"] if shape == "probe" else min(DATASET_ITEMS.values())
    if items > most:
        raise SystemExit(f"--episodes {episodes} needs {items} items per dataset; there are {most} (at most {most * per_item} episodes)")
    names = agent_names(shape)
    for name in names:
        agent = {"name": name, "backend": "vllm", "model": name, "base_url": base_url, "concurrency": concurrency,
                 "sampling": {"temperature": 0.0, "max_tokens": 32}}
        (folder / f"{name}.yaml").write_text(yaml.safe_dump(agent))
    common = {"items": {"limit": items}, "user_modes": USER_MODES, "user_prompt_file": PROMPT, "temperatures": TEMPERATURES,
              "samples_per_temperature": SAMPLES, "max_tokens": 32}
    if shape == "probe":
        spec = {"kind": "probe", "name": f"size-{episodes}", "dataset": "gsm8k", "assistant": "mock.yaml", "user": "mock.yaml",
                **common, "perturbations": PROBE_PERTURBATIONS}
    else:
        spec = {"kind": "sweep", "name": f"size-{episodes}", "agents": [f"{n}.yaml" for n in names], "user": "self",
                "datasets": list(DATASET_ITEMS), **common, "perturbations": SWEEP_PERTURBATIONS}
    path = folder / "size.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def run_id_of(spec: Path) -> str:
    """The run id `testbed show` prints for the spec."""
    out = subprocess.run([str(BIN / "testbed"), "show", str(spec)], capture_output=True, text=True, check=True, cwd=REPO)
    return json.loads(out.stdout)["run_id"]


def stored_run_id(store: Path, scenario: str) -> str:
    """The newest run of `scenario` in the store (a rerun's spec names another mock port, so its id differs)."""
    from testbed.store import Store

    db = Store(store, readonly=True)
    try:
        found = [r["run_id"] for r in db.runs() if r["scenario"] == scenario]
    finally:
        db.close()
    if not found:
        raise SystemExit(f"--skip-run: no run of {scenario} in {store}; run once without --skip-run")
    return found[0]


def store_counts(store: Path, run_id: str) -> dict:
    """Episodes, messages and judged user turns in the store (read through the store's API)."""
    from testbed.store import Store
    from testbed.store.browse import message_counts
    from testbed.store.labels import identities, latest_label_tuples

    db = Store(store, readonly=True)
    try:
        counts = db.episode_counts(run_id)
        local = [i for i in identities(db, run_id) if i.judge == "local"]
        return {"episodes": sum(counts.values()), "errors": counts["error"], "messages": sum(message_counts(db, run_id).values()),
                "user_turns": len(latest_label_tuples(db, run_id)) if local else 0,
                "store_mib": round(store.stat().st_size / 2**20, 1)}
    finally:
        db.close()


def main() -> None:
    """Parse arguments, time the four phases, print the table and one JSON line."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--episodes", type=int, default=2000, help="at least this many (whole items per dataset)")
    p.add_argument("-c", "--concurrency", type=int, default=256)
    p.add_argument("--shape", choices=("sweep", "probe"), default="sweep", help="12 models × 5 datasets, or one GSM8K probe")
    p.add_argument("--store", type=Path, help="store path (default: a temporary folder, removed at the end)")
    p.add_argument("--skip-run", action="store_true", help="reuse the run already in --store; time plan, judge and report only")
    p.add_argument("--keep", action="store_true", help="keep the temporary folder (printed)")
    args = p.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="size-bench-"))
    store = args.store or folder / "store.sqlite"
    env = {**os.environ, "TESTBED_STORE": str(store)}
    testbed = str(BIN / "testbed")
    mock, base_url = start_mock(folder, agent_names(args.shape))
    try:
        spec = write_spec(folder, base_url, args.episodes, args.concurrency, args.shape)
        run_id = stored_run_id(store, f"size-{args.episodes}") if args.skip_run else run_id_of(spec)
        phases = {"plan": timed([sys.executable, "-c", PLAN_SNIPPET, str(spec)], env=env)}
        if not args.skip_run:
            phases["run"] = timed([testbed, "run", str(spec), "--no-judge", "--no-report", "-q", "--store", str(store)], env=env)
        phases["judge"] = timed([testbed, "judge", run_id, "--judge", "local", "-q", "--store", str(store)], env=env)
        with open(folder / "report.txt", "w") as out:
            phases["report"] = timed([testbed, "report", run_id, "--store", str(store)], env=env, stdout=out)
        counts = store_counts(store, run_id)
    finally:
        mock.terminate()
        mock.wait()
    print(f"{'phase':8} {'wall s':>9} {'peak RSS MiB':>13}")
    for name, r in phases.items():
        print(f"{name:8} {r['wall_s']:>9.2f} {r['peak_rss_mib']:>13.1f}")
    print(f"run {run_id}: {counts['episodes']} episodes ({counts['errors']} errors), {counts['messages']} messages, "
          f"{counts['user_turns']} judged user turns, store {counts['store_mib']} MiB")
    print(json.dumps({"episodes_requested": args.episodes, "shape": args.shape, "run_id": run_id, "concurrency": args.concurrency, **counts,
                      **{f"{k}_{m}": v for k, r in phases.items() for m, v in r.items()}}))
    if args.keep:
        print(f"kept {folder}", file=sys.stderr)
    else:
        shutil.rmtree(folder)


if __name__ == "__main__":
    main()
