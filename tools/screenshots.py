"""``python -m tools.screenshots``: an SVG of every screen, from Textual's own export.

The console runs headless on the sample store (the demo's story at a fixed
time), with the inbox running on an empty inbox, and each screen is saved
under ``screenshots/`` (``make screenshots``).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from core.home import Home

from .sample_store import FIXED_NOW, PASSPHRASE, add_lifecycle, build

ROOT = Path(__file__).resolve().parents[1]
SCREENS = [
    ("cases", "1"),
    ("ranking", "2"),
    ("quarantine", "3"),
    ("retention", "4"),
    ("activity", "5"),
    ("help", "question_mark"),
]
HOME_LABEL = "/srv/ussd"


async def signing_dialog(app, p, out: Path) -> Path:
    """The resolve dialog on the sample conflict, filled in but not signed."""
    from textual.widgets import Input

    await p.press("3")
    await app.settled()
    await p.press("a")
    for _ in range(100):
        if getattr(app.screen, "preview", None) is None and hasattr(app.screen, "refresh_preview"):
            app.screen.query_one("#reason", Input).value = "Kakuma1 radioed the corrected headcount"
            app.screen.query_one("#passphrase", Input).value = PASSPHRASE
        if getattr(app.screen, "preview", None) is not None:
            break
        await p.pause(0.05)
    await p.pause()
    target = out / "signing.svg"
    target.write_text(app.export_screenshot(title="ussd-console: signing a resolve"), encoding="utf-8")
    await p.press("escape")
    return target


async def case_history(app, p, out: Path) -> Path:
    """Enter on kak01-1 in the ranking: dispatched while its correction waits, so disputed."""
    from console.dialogs.case_screen import CaseScreen

    await p.press("2")
    await app.settled()
    await p.press("down", "down", "enter")
    return await _shoot_when(app, p, lambda: isinstance(app.screen, CaseScreen) and app.screen.story is not None,
                             out / "case.svg", "ussd-console: a case's history")


async def overview(app, p, out: Path) -> Path:
    """The Overview (o): today's arrivals per hour and people by need."""
    from console.dialogs.overview_screen import OverviewScreen

    await p.press("o")
    return await _shoot_when(app, p, lambda: isinstance(app.screen, OverviewScreen) and app.screen.figures is not None,
                             out / "overview.svg", "ussd-console: the overview")


async def _shoot_when(app, p, ready, target: Path, title: str) -> Path:
    """A pushed screen's picture once its worker has loaded it (up to 10 s), then back out of it."""
    for _ in range(200):
        if ready():
            break
        await p.pause(0.05)
    await p.pause()
    target.write_text(app.export_screenshot(title=title), encoding="utf-8")
    await p.press("escape")
    return target


def take(out: Path, size: tuple[int, int]) -> list[Path]:
    from console.app import ConsoleApp

    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    with tempfile.TemporaryDirectory(prefix="ussd-shots-") as tmp:
        # Someone to sign in the dialog's picture, and cases dispatched and served.
        home = add_lifecycle(build(Home(Path(tmp) / "home")))
        app = ConsoleApp(home, clock=lambda: FIXED_NOW, evict_every=None, home_label=HOME_LABEL)

        async def pilot(p) -> None:
            await app.settled()
            await p.pause(0.3)  # the inbox has started and reported its health
            for name, key in SCREENS:
                await p.press(key)
                await p.pause()
                await app.settled()
                await p.pause()
                target = out / f"{name}.svg"
                target.write_text(app.export_screenshot(title=f"ussd-console: {name}"), encoding="utf-8")
                written.append(target)
                if name == "help":
                    await p.press("escape")
            written.append(await case_history(app, p, out))
            written.append(await overview(app, p, out))
            written.append(await signing_dialog(app, p, out))
            app.exit()

        app.run(headless=True, size=size, auto_pilot=pilot)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.screenshots", description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "screenshots"), help="folder for the SVG files")
    parser.add_argument("--size", default="80x24", help="terminal size, WIDTHxHEIGHT (default 80x24)")
    args = parser.parse_args(argv)
    width, height = (int(n) for n in args.size.lower().split("x"))
    os.environ["TZ"] = "UTC"  # the pictures show the same times on every machine
    time.tzset()
    for path in take(Path(args.out), (width, height)):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
