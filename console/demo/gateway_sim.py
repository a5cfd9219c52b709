"""A pretend SMS/USSD gateway for the demo: the sample sessions, delivered into an inbox.

It knows nothing of frames or of the receiver: it copies the files under
``console/demo/samples`` into the inbox on a schedule of about a minute, the way a
gateway would (write a temporary name, then rename it in), with the troubles
the field really has: a session dropped after one frame and re-sent, full and
partial re-sends, a re-ranked case, a correction that conflicts, a corrupted
trailer, and a legacy CSV export that carries the sender's phone number.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Callable, NamedTuple

from core.i18n import N_

SAMPLES = Path(__file__).resolve().parent / "samples"  # package data: they travel with an installed wheel


class Step(NamedTuple):
    after: float  # seconds after the previous step
    sample: str  # file under console/demo/samples
    name: str  # name it gets in the inbox
    story: str  # what a newcomer should notice


STORY = [
    Step(1, "00-dropped-session.txt", "kakuma-0800-a.txt",
         N_("Kakuma session 1 arrives, but the link drops after the first frame.")),
    Step(5, "01-session.txt", "kakuma-0800-b.txt",
         N_("No receipt, so Kakuma re-sends the whole session: the first frame is a duplicate.")),
    Step(6, "08-ifo-session.txt", "ifo-0805.txt", N_("Ifo sends its first session: three new cases.")),
    Step(6, "02-full-resend.txt", "kakuma-0800-c.txt",
         N_("Kakuma re-sends session 1 again: all duplicates, nobody is counted twice.")),
    Step(6, "03-partial-resend.txt", "kakuma-0800-d.txt",
         N_("A partial re-send (only WAT 12): still counted once, the ranking does not move.")),
    Step(6, "07-legacy-export.csv", "dadaab-export.csv",
         N_("A legacy gateway exports Dadaab's messages as CSV, phone numbers included: "
            "the frames are taken, the phone numbers are not stored.")),
    Step(6, "06-rerank.txt", "kakuma-0900.txt",
         N_("Kakuma session 2: an urgent case re-packs the others (kak03-3 becomes kak03-4): "
            "re-ranked, not double counted.")),
    Step(7, "04-conflict.txt", "kakuma-0905.txt",
         N_("kak01-1 comes back with 9 people instead of 3: a conflict, held for an operator.")),
    Step(7, "05-bad-lines.txt", "kakuma-0910.txt",
         N_("A trailer corrupted on the air and a truncated frame: both rejected, with file and line.")),
    Step(6, "08-ifo-session.txt", "ifo-0805-resend.txt", N_("Ifo re-sends its session: duplicates only.")),
]


def drop_session(inbox: Path, sample: Path, name: str) -> Path:
    """Drop one sample session into ``inbox`` as a careful gateway writes: a dot-named temporary
    file, then an atomic rename (the inbox's ``deliver`` is what takes it out again)."""
    inbox.mkdir(parents=True, exist_ok=True)
    data = sample.read_bytes()
    tmp = inbox / f".{name}.part"
    with open(tmp, "wb") as out:
        out.write(data)
        out.flush()
        os.fsync(out.fileno())
    target = inbox / name
    os.replace(tmp, target)
    return target


class GatewaySim:
    """Runs ``STORY`` on a thread; ``pace`` scales the delays (0 delivers at once)."""

    def __init__(self, inbox: Path, samples: Path = SAMPLES, pace: float = 1.0,
                 on_step: Callable[[int, Step], None] | None = None,
                 on_done: Callable[[], None] | None = None):
        self.inbox = Path(inbox)
        self.samples = Path(samples)
        self.pace = pace
        self.on_step = on_step
        self.on_done = on_done
        self.delivered: list[Path] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self.run, name="gateway-sim", daemon=True)
        self._thread.start()

    def join(self, timeout: float | None = None) -> bool:
        """Wait for the story to end; True if it has."""
        if self._thread is not None:
            self._thread.join(timeout)
        return self.finished

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def run(self) -> None:
        for number, step in enumerate(STORY, start=1):
            if self._stop.wait(step.after * self.pace):
                return
            self.delivered.append(drop_session(self.inbox, self.samples / step.sample, step.name))
            if self.on_step is not None:
                self.on_step(number, step)
        if self.on_done is not None:
            self.on_done()

    @property
    def finished(self) -> bool:
        return len(self.delivered) == len(STORY)
