"""``python -m tools.report_shot``: the situation report's HTML as headless Chromium shows it.

Writes the report of the sample store's day (the demo's story at a fixed time, with cases
dispatched and served) and saves ``screenshots/report.png`` from Debian's Chromium with every
network request refused (``--host-resolver-rules`` maps every name to nowhere, and the page is a
local file): what a coordinator sees opening the attachment offline. ``make screenshots`` runs it.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from core.home import Home

from .browser_shot import find_chromium
from .sample_store import add_lifecycle, build

ROOT = Path(__file__).resolve().parents[1]
PERIOD = ("--since", "2024-05-02", "--until", "2024-05-02")
WINDOW = (1000, 3700)


def shoot(html: Path, png: Path, chromium: str) -> None:
    with tempfile.TemporaryDirectory(prefix="ussd-chromium-") as profile:
        subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                        f"--user-data-dir={profile}", "--host-resolver-rules=MAP * ~NOTFOUND",
                        f"--window-size={WINDOW[0]},{WINDOW[1]}", f"--screenshot={png}", html.as_uri()],
                       check=True, capture_output=True, timeout=120)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.report_shot", description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "screenshots"), help="folder for report.png")
    args = parser.parse_args(argv)
    chromium = find_chromium()
    if chromium is None:
        print("no chromium: scripts/ensure-chromium installs Debian's", file=sys.stderr)
        return 1
    os.environ["TZ"] = "UTC"  # the same times on every machine
    time.tzset()
    from console.cli import main as cli

    with tempfile.TemporaryDirectory(prefix="ussd-report-shot-") as tmp:
        home = add_lifecycle(build(Home(Path(tmp) / "home")))
        html = Path(tmp) / "report.html"
        code = cli(["--home", str(home.root), "report", *PERIOD, "--to", str(html)])
        if code:
            return code
        png = Path(args.out) / "report.png"
        shoot(html, png, chromium)
    print(png)
    return 0


if __name__ == "__main__":
    sys.exit(main())
