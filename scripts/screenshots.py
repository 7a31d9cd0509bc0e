"""The README's screenshots of `testbed replay`: the app's own SVG export, converted to PNG.

    .venv/bin/python scripts/screenshots.py --store .testbed/store.sqlite --run dialogue-gsm8k --out docs/

drives the app headless at 120x40 with textual's Pilot: the episode table of the run, then the
transcript of its first drifted episode with the cursor on the drift onset. PNG conversion needs
cairosvg (`pip install cairosvg==2.9.1`, which needs the system's libcairo); without it the SVGs
are written and the command to convert them is printed.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from testbed.replay.app import ReplayApp
from testbed.replay.transcript_screen import TranscriptScreen
from testbed.store import Store

SIZE = (120, 40)


async def capture(store: Store, run: str, out: Path) -> list[Path]:
    """Save the episode table and a drifted transcript at its onset as SVG; the paths written."""
    run_id = store.run(run).run_id
    app = ReplayApp(store, run_id)
    written = []
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        written.append(Path(app.save_screenshot("replay-episodes.svg", str(out))))
        await pilot.press("d", "enter")
        if not isinstance(app.screen, TranscriptScreen):
            raise SystemExit(f"run {run_id} has no drifted episode under its default judge: nothing to show at an onset")
        await pilot.press("o")
        await pilot.pause()
        written.append(Path(app.save_screenshot("replay-transcript.svg", str(out))))
    return written


def to_png(svgs: list[Path]) -> list[Path]:
    """Convert each SVG to a PNG beside it (twice the size, for sharp text)."""
    try:
        import cairosvg
    except ImportError:
        sys.exit("SVGs written; to make PNGs install cairosvg==2.9.1 and run this again, or convert "
                 + " ".join(map(str, svgs)) + " with any SVG renderer")
    pngs = []
    for svg in svgs:
        png = svg.with_suffix(".png")
        cairosvg.svg2png(url=str(svg), write_to=str(png), scale=1.5)
        pngs.append(png)
    return pngs


def main() -> None:
    """Parse the arguments, capture, convert."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", type=Path, default=Path(".testbed/store.sqlite"))
    parser.add_argument("--run", required=True, help="run id or a unique prefix")
    parser.add_argument("--out", type=Path, default=Path("docs"))
    parser.add_argument("--svg-only", action="store_true", help="write the SVGs and stop")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    svgs = asyncio.run(capture(Store(args.store, readonly=True), args.run, args.out))
    for path in svgs if args.svg_only else to_png(svgs):
        print(path)


if __name__ == "__main__":
    main()
