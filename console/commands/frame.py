"""``frame``: a whole frame from its body, trailer worked out, for trying the receiver by hand."""

from __future__ import annotations


from console.errors import CommandError
from console.render import make_console, print_json, safe
from core.i18n import _
from core.rules.compose import BadBody, compose

from .common import with_examples


def register(sub, common) -> None:
    p = sub.add_parser(
        "frame", parents=[common], help=_("a whole frame from its body: the checksum trailer worked out"),
        description=_("Print the whole frame for BODY (the six fields before '|#'), with the trailer the "
                      "receiver checks. A body the receiver would reject is an error that names the field."),
        **with_examples("ussd-console frame 'H1|1|Lodwar1|WAT|15|88'",
                        "ussd-console frame 'H1|1|Lodwar1|WAT|15|88' --id lod01-1 > my-frames.txt",
                        "ussd-console frame 'H1|1|Lodwar1|WAT|15|88' --json"))
    p.add_argument("body", metavar="BODY", help=_("H1|place|site|need|people|priority, e.g. %(example)s",
                                                  example="H1|1|Lodwar1|WAT|15|88"))
    p.add_argument("--id", dest="frame_id", metavar="FRAME_ID",
                   help=_("print a '<frame_id> <frame>' line, as a file for %(command)s or the inbox holds",
                          command="`ingest`"))
    p.set_defaults(handler=cmd_frame)


def cmd_frame(args, ctx) -> int:
    try:
        made = compose(args.body, args.frame_id)
    except BadBody as exc:
        raise CommandError.told(_("not a frame body: %(reason)s"), reason=exc) from None
    if ctx.json:
        print_json(made._asdict())
        return 0
    line = f"{made.frame_id} {made.frame}" if made.frame_id else made.frame
    make_console().print(safe(line, 200), soft_wrap=True)
    return 0
