"""`testbed run` as a job would start it, with the managed vLLM server replaced by the stand-in
(tests/backends/stand_in_vllm_server.py): the owner process of the server-lifecycle tests.

    python stand_in_server_owner.py REPORT [--fail-mid-run] -- RUN ARGS...

SIGINT gets Python's default handler, as a terminal's Ctrl-C finds it (a suite started in the background
inherits an ignored SIGINT). `--fail-mid-run` makes the run raise an unexpected error once its servers are up.
"""

from __future__ import annotations

import asyncio
import signal
import sys
from pathlib import Path

from testbed.backends import vllm_server

STAND_IN = Path(__file__).with_name("stand_in_vllm_server.py")


def main() -> None:
    report, *flags = sys.argv[1:sys.argv.index("--")]
    sys.argv = ["testbed", *sys.argv[sys.argv.index("--") + 1:]]
    signal.signal(signal.SIGINT, signal.default_int_handler)
    vllm_server.vllm_flavour = lambda: "gpu"
    vllm_server.VLLMServer.command = lambda self: [sys.executable, str(STAND_IN), "--port", str(self.port),
                                                   "--model", self.served_name, "--report", report]
    if "--fail-mid-run" in flags:
        import testbed.running.runner

        async def fail(*args, **kwargs):
            await asyncio.sleep(0.5)
            raise RuntimeError("the run failed unexpectedly")

        testbed.running.runner.execute_units = fail
    from testbed.cli import main as testbed_main

    testbed_main()


if __name__ == "__main__":
    main()
