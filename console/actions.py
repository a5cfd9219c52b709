"""Every action of the console, declared once (after Harlequin's ``actions.py``).

One entry says an action's id (the name ``[console.keys]`` in ``config.toml``
remaps), its default key(s), the words the footer and the help screen show, the
screens it belongs to, and the signed action it signs, if any (its role comes
from the table of signed actions, ``console.signed_actions``). Everything else is
derived from this table, so adding a key is one entry here:

- the ``BINDINGS`` of the app, the ``Panel`` base, each panel and the case screen
  (``bindings(scope)``), each ``Binding`` carrying the action's id so Textual's
  keymap (``App.set_keymap``) can move it;
- the help screen (``help_rows``, ``who_may``), with the keys in force;
- the command palette (``palette_entries``), with the synonyms an operator types;
- the key table of docs/operator.md (``key_table_markdown``; a test compares them).

Scopes: ``app`` works on every screen of the main window; ``tables`` on every
panel (the ``Panel`` base holds it); a tab id (``cases`` ...) on that panel;
``case`` on a case's history. A ``priority`` action also works inside dialogs
and the help screen (never while a text field has the keyboard: it types there).
``fixed`` actions belong to a widget (Enter on a table row, Tab): they are listed
and offered in the palette but are not remappable.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from textual.binding import Binding

from core.signing import roles
from core.signing.actions import ACCEPT, KEEP, RETENTION
from core.signing.marks import MARK, STATUS_WORDS

from core.i18n import N_, _

from . import signed_actions

# The tabs in order (ids and titles); console.panels.PANELS must match (a test checks it).
TABS: tuple[tuple[str, str], ...] = (
    ("cases", N_("Cases")),
    ("ranking", N_("Ranking")),
    ("quarantine", N_("Quarantine")),
    ("retention", N_("Retention")),
    ("activity", N_("Activity")),
)
SCOPE_TITLES: dict[str, str] = {
    "app": N_("Everywhere"),
    "tables": N_("Every screen with a table"),
    **{tab: f"{n} {title}" for n, (tab, title) in enumerate(TABS, start=1)},
    "case": N_("A case's history (Enter on a case)"),
    "overview": N_("The Overview (o)"),
}
TAB_IDS = tuple(tab for tab, _title in TABS)
# Keys the modal screens keep for themselves (their own BINDINGS, not remappable): a key moved onto
# one of them would be ambiguous there. "dialogs": the signing, confirm and export dialogs.
LOCAL_KEYS = {
    "case": {"escape": "close", "q": "close"},
    "overview": {"escape": "close", "q": "close"},
    "dialogs": {"escape": "cancel", "ctrl+s": "sign", "enter": "enter", "y": "yes", "n": "no"},
}
# What a tab holds beyond its name, in words, and the commands of ussd-console it shows in the console.
TAB_HOLDS: dict[str, tuple[str, ...]] = {
    "cases": ("", "cases"),
    "ranking": ("", "ranking"),
    "quarantine": ("", "quarantine"),
    "retention": (N_("the policy, evictions and backups"), "retention", "evictions", "backup"),
    "activity": (N_("arrivals, rejects, rejected files, gateways"), "rejects", "files", "gateway"),
}
# The commands of ussd-console that the console does not do, and why: every other command is an
# action of the table below (``Action.cli``), so the palette finds it by the command's name.
CLI_ONLY: dict[str, str] = {
    "ingest": "takes a file by hand; the console takes the inbox itself (w sweeps it now)",
    "frame": "builds a test frame with its trailer, for a file or a gateway script; needs no home",
    "status": "the header says it",
    "demo": "starts a console of its own",
    "operator": "adds and retires operators; an admin's job at the command line",
    "pending": "countersigned requests are approved at the command line",
    "approve": "countersigned requests are approved at the command line",
    "reject": "countersigned requests are refused at the command line",
    "audit": "the audit log is read and checked at the command line",
    "watch": "the headless receiver; the console takes the inbox itself",
    "alerts": "alert delivery is set up and tested at the command line",
    "serve": "serves this console to a browser",
    "console": "opens this console",
    "restore": "replaces the store; never from a running console",
}
PAGED = ("cases", "ranking", "quarantine")  # screens whose tables are windows of the store

# Textual's names of the keys that are not one character, as an operator reads them.
KEY_NAMES = {
    "slash": "/",
    "question_mark": "?",
    "left_square_bracket": "[",
    "right_square_bracket": "]",
    "escape": "Esc",
    "enter": "Enter",
    "home": "Home",
    "end": "End",
    "pageup": "PageUp",
    "pagedown": "PageDown",
    "tab": "Tab",
    "up": "Up",
    "down": "Down",
}
KEY_DISPLAY = {"question_mark": "?", "left_square_bracket": "[", "right_square_bracket": "]"}  # in the footer
RESERVED = frozenset({"tab", "shift+tab", "ctrl+c"})  # Textual's own: focus moves and copy
MODIFIERS = frozenset({"ctrl", "shift", "alt", "meta", "super", "hyper"})


@dataclass(frozen=True)
class Action:
    id: str  # the name in [console.keys]
    keys: str  # default key(s), Textual names, comma separated
    action: str  # the Textual action run by the key
    description: str  # footer and help
    scopes: tuple[str, ...]
    title: str = ""  # the palette's words (default: the description)
    words: tuple[str, ...] = ()  # more words the palette finds it by
    signed: str = ""  # the id of the signed action it signs (console.signed_actions), if it signs
    needs: str = ""  # the state it needs, in words
    show: bool | tuple[str, ...] = False  # in the footer: everywhere it is bound, or on these scopes
    priority: bool = False
    fixed: bool = False  # the key belongs to a widget: listed, offered, not remappable
    cli: tuple[str, ...] = ()  # the ussd-console commands it does in the console: the palette finds it by them

    @property
    def signs(self) -> bool:
        return bool(self.signed)

    @property
    def role(self) -> str | None:
        """The role an operator needs to sign it, as the table of signed actions says."""
        return signed_actions.BY_ID[self.signed].role if self.signed else None

    @property
    def palette_title(self) -> str:
        """The palette's words in English (the docs' key table, and what the palette also finds)."""
        title = self.title or self.description
        return f"{title} (signed)" if self.signs else title

    @property
    def shown_title(self) -> str:
        """The palette's words in the operator's language."""
        title = _(self.title or self.description)
        return _("%(title)s (signed)", title=title) if self.signs else title

    def shown_on(self, scope: str) -> bool:
        return self.show if isinstance(self.show, bool) else scope in self.show


# The palette's words for the marks, each whole so a translator sees the sentence (the words of
# core.signing.marks: _marks checks they agree).
MARK_TITLES = {
    "dispatched": N_("Mark the selected case dispatched (a team is on its way)"),
    "served": N_("Mark the selected case served (aid delivered)"),
    "closed": N_("Mark the selected case closed (no action needed; say why)"),
    "open": N_("Mark the selected case open (back into the ranking)"),
}
# The tabs' actions: "Show Cases" in the footer and help, with what the tab holds in the palette.
SHOW_WORDS = {
    "cases": (N_("Show Cases"), N_("Show Cases")),
    "ranking": (N_("Show Ranking"), N_("Show Ranking")),
    "quarantine": (N_("Show Quarantine"), N_("Show Quarantine")),
    "retention": (N_("Show Retention"), N_("Show Retention: the policy, evictions and backups")),
    "activity": (N_("Show Activity"), N_("Show Activity: arrivals, rejects, rejected files, gateways")),
}


def _marks() -> list[Action]:
    keys = {  # label, key, and whether the footer shows it
        "dispatched": (N_("Dispatched"), "D", True),
        "served": (N_("Served"), "S", True),
        "closed": (N_("Closed"), "C", False),
        "open": (N_("Re-open"), "O", False),
    }
    assert all(MARK_TITLES[status] == f"Mark the selected case {status} ({STATUS_WORDS[status][1]})" for status in keys)
    return [
        Action(f"mark_{status}", key, f"mark('{status}')", label, ("cases", "ranking", "case"),
               title=MARK_TITLES[status], words=("mark", "status", status),
               signed=MARK.id, needs=N_("a selected case"), show=("cases", "ranking") if footer else False,
               cli=("case",))
        for status, (label, key, footer) in keys.items()
    ]


ACTIONS: tuple[Action, ...] = (
    # -- everywhere -------------------------------------------------------------------------
    *(Action(f"show_{tab}", str(n), f"show_panel('{tab}')", SHOW_WORDS[tab][0], ("app",), title=SHOW_WORDS[tab][1],
             words=("screen", "tab", tab), cli=TAB_HOLDS[tab][1:])
      for n, (tab, title) in enumerate(TABS, start=1)),
    Action("help", "question_mark", "help", N_("Help"), ("app",), title=N_("Help: every key, and who may sign what"),
           words=("keys", "roles"), show=True),
    Action("palette", "ctrl+p", "command_palette", N_("palette"), ("app",),
           title=N_("Command palette: every action by name"), words=("commands", "search"), priority=True),
    Action("maximize", "m", "toggle_maximize", N_("Maximize"), ("app",), title=N_("Maximize or restore the focused table"),
           words=("zoom", "full screen")),
    Action("refresh", "ctrl+r", "refresh", N_("Refresh now"), ("app",), title=N_("Refresh now: query the store again"),
           words=("reload", "update")),
    Action("dismiss", "d", "dismiss_notes", N_("Dismiss notifications"), ("app",),
           title=N_("Dismiss the notifications"), words=("clear", "hide", "notes"), priority=True),
    Action("lock_key", "ctrl+l", "lock_key", N_("Lock the signing key"), ("app",),
           title=N_("Lock the signing key now"), words=("passphrase", "signing")),
    Action("overview", "o", "overview", N_("Overview"), ("app",),
           title=N_("Overview: today's arrivals per hour and people by need, and today's report"),
           words=("summary", "charts", "sparkline", "today", "report")),
    Action("quit", "q", "ask_quit", N_("Quit"), ("app",), title=N_("Quit the console"), words=("exit", "close"),
           show=True),
    Action("next_widget", "tab", "app.focus_next", N_("Next widget (shift+tab: previous)"), ("app",), fixed=True),
    # -- every screen with a table: the Panel base ------------------------------------------
    Action("page_next", "right_square_bracket", "page(1)", N_("Next page"), ("tables",),
           title=N_("Next page: the next window of rows (Cases, Ranking, Quarantine)"), words=("more", "page")),
    # Not in the footer: the info line above each table says which rows are shown, and at 80
    # columns the footer has room for the screen's own actions and Quit, not for paging too.
    Action("page_previous", "left_square_bracket", "page(-1)", N_("Previous page"), ("tables",),
           title=N_("Previous page: the previous window of rows"), words=("back", "page")),
    Action("first_row", "home", "first_row", N_("First row of the table"), ("tables",),
           words=("top", "start"), priority=True),
    Action("last_row", "end", "last_row", N_("Last row of the table"), ("tables",),
           words=("bottom",), priority=True),
    Action("rows_up", "pageup", "rows_up", N_("Up a screenful of rows"), ("tables",), priority=True),
    Action("rows_down", "pagedown", "rows_down", N_("Down a screenful of rows"), ("tables",), priority=True),
    # In the Cases footer: the first screen a new operator sees says what Enter does (the other
    # screens say it on their info line).
    Action("history", "enter", "history", N_("History"), ("cases", "ranking", "quarantine"),
           title=N_("History of the selected case (versions, marks, conflicts)"),
           words=("case", "versions", "marks", "story"), needs=N_("a selected case"), fixed=True, show=("cases",),
           cli=("case",)),
    # Activity's sweep, declared before export so its footer reads "w Sweep  e Export"
    Action("sweep", "w", "app.sweep_now", N_("Sweep inbox now"), ("activity",), title=N_("Sweep the inbox now"),
           words=("inbox", "files", "look"), needs=N_("the inbox running in this console"), show=True),
    Action("export", "e", "export", N_("Export"), ("cases", "ranking", "quarantine", "activity"),
           title=N_("Export a view (CSV or .xlsx, to the home's exports/)"),
           words=("save", "file", "csv", "xlsx", "spreadsheet"), show=("ranking", "activity"), cli=("export",)),
    # -- Cases ------------------------------------------------------------------------------
    Action("filter", "slash", "filter", N_("Filter"), ("cases",), title=N_("Filter cases by site, need or id"),
           words=("search", "find"), show=True),
    Action("sort", "s", "next_sort", N_("Sort"), ("cases",), title=N_("Sort cases by the next column"),
           words=("order",), show=True),
    # Not in the footer: at 80 columns Enter's history takes its place; the info line shows the
    # order's direction (v or ^) and the help screen lists r.
    Action("reverse", "r", "reverse", N_("Reverse"), ("cases",), title=N_("Reverse the sort of cases"),
           words=("order", "ascending", "descending")),
    Action("clear_filter", "escape", "clear_filter", N_("Clear filter"), ("cases",),
           title=N_("Clear the filter: every case again")),
    *_marks(),
    # -- Quarantine -------------------------------------------------------------------------
    Action("keep_first", "k", "resolve('keep_first')", N_("Keep first"), ("quarantine",),
           title=N_("Resolve the conflict: keep the first version"), words=("resolve", "conflict", "keep", "reject"),
           signed=KEEP.id, needs=N_("an open conflict selected"), show=True, cli=("resolve",)),
    Action("accept_correction", "a", "resolve('accept_correction')", N_("Accept correction"), ("quarantine",),
           title=N_("Resolve the conflict: accept the correction"), words=("resolve", "conflict", "accept", "new version"),
           signed=ACCEPT.id, needs=N_("an open conflict selected"), show=True,
           cli=("resolve",)),
    Action("toggle_resolved", "t", "toggle_resolved", N_("Resolved too"), ("quarantine",),
           title=N_("Conflicts: list resolved ones too"), words=("resolved", "conflict", "history"), show=True),
    # -- Retention --------------------------------------------------------------------------
    Action("evict_now", "e", "app.evict_now", N_("Evict now"), ("retention",),
           title=N_("Run eviction now: forget old frame ids (asks first, logged)"),
           words=("retention", "forget", "clean"), show=True, cli=("evict",)),
    Action("sign_exception", "x", "app.sign_exception", N_("Sign exception"), ("retention",),
           title=N_("Change the retention policy (below 30 days: an exception)"),
           words=("retention", "exception", "policy", "days"), signed=RETENTION.id, show=True,
           cli=("retention",)),
    # -- the Overview -----------------------------------------------------------------------
    Action("write_report", "r", "write_report", N_("Write today's report"), ("overview",),
           title=N_("Write today's situation report (HTML, to the home's reports/) and say where"),
           words=("report", "situation", "html", "coordinator"), show=True, cli=("report",)),
    # -- Activity ---------------------------------------------------------------------------
    Action("reject_details", "enter", "", N_("The whole rejected line and what was wrong"), ("activity",),
           title=N_("Details of the selected reject"), words=("reject", "why"), fixed=True),
)
BY_ID: dict[str, Action] = {a.id: a for a in ACTIONS}
assert len(BY_ID) == len(ACTIONS), "an action id is declared twice"


def in_scope(scope: str) -> list[Action]:
    return [a for a in ACTIONS if scope in a.scopes]


def bindings(scope: str) -> list[Binding]:
    """The ``BINDINGS`` of the node that holds ``scope``, each with its action's id."""
    return [
        Binding(a.keys, a.action, a.description, show=a.shown_on(scope), priority=a.priority, id=a.id,
                key_display=KEY_DISPLAY.get(a.keys))
        for a in in_scope(scope) if not a.fixed
    ]


def table_bindings(scope: str) -> list[Binding]:
    """The footer entries of a table's own keys (Enter on a row) on ``scope``: the table selects the
    row, and the panel does what the action says."""
    return [Binding(a.keys, "select_cursor", a.description, show=True, id=a.id)
            for a in in_scope(scope) if a.fixed and a.shown_on(scope)]


def key_label(keys: str) -> str:
    """``right_square_bracket,x`` reads ``] x``."""
    return " ".join(KEY_NAMES.get(k.strip(), k.strip()) for k in keys.split(","))


def keys_of(action: Action, keymap: Mapping[str, str] | None = None) -> str:
    """The keys in force: the keymap's when it moves the action, else the default."""
    return (keymap or {}).get(action.id) or action.keys


# -- [console.keys]: checked at start -------------------------------------------------------------
def _norm(keys: str) -> list[str]:
    """Textual's long names ("?" is ``question_mark``), as its keymap reads them."""
    from textual.keys import _normalize_key_list

    return _normalize_key_list(keys).split(",")


def _is_key(key: str) -> bool:
    from textual.keys import Keys, key_to_character

    *mods, base = key.split("+")
    return (all(m in MODIFIERS for m in mods) and bool(base)
            and (key_to_character(base) is not None or base in {k.value for k in Keys}))


def check_keymap(keys: Mapping[str, str], where: str = "[console.keys]") -> dict[str, str]:
    """The keymap an operator wrote, checked against the table: an unknown id, a key two actions
    share on one screen, a fixed or reserved key is a ``ValueError`` that names it."""
    out: dict[str, str] = {}
    for action_id, value in keys.items():
        if action_id not in BY_ID:
            raise ValueError(f"{where}: unknown action {action_id!r} (the help screen, ?, lists every id)")
        if BY_ID[action_id].fixed:
            raise ValueError(f"{where}: {action_id!r} is a widget's own key and cannot be moved")
        if not isinstance(value, str) or not value.strip() or any(not k.strip() for k in value.split(",")):
            raise ValueError(f"{where}: {action_id} must be a key name such as \"ctrl+q\", not {value!r}")
        out[action_id] = ",".join(_norm(value))
        unknown = [k for k in _norm(value) if not _is_key(k)]
        if unknown:
            raise ValueError(f"{where}: {action_id} = {value!r}: {unknown[0]!r} is not a key name "
                             "(e.g. q, ctrl+q, f1, home, question_mark)")
        reserved = (RESERVED | ({"ctrl+q"} if action_id != "quit" else set())) & set(_norm(value))
        if reserved:
            key = sorted(reserved)[0]
            raise ValueError(f"{where}: {action_id} = {value!r}: {key} is Textual's own key"
                             + (" (it quits; only quit may take it)" if key == "ctrl+q" else ""))
    for scope in (*SCOPE_TITLES, "dialogs"):
        holders = dict(LOCAL_KEYS.get(scope, {}))
        if scope in TAB_IDS:
            visible = in_scope(scope) + in_scope("tables") + in_scope("app")
        elif scope == "tables":
            visible = in_scope(scope) + in_scope("app")
        else:  # app, and the modal screens: only the priority keys of the app reach those
            visible = in_scope(scope) + [a for a in in_scope("app") if a.priority]
        for a in visible:
            for key in _norm(keys_of(a, out)):
                other = holders.setdefault(key, a.id)
                if other != a.id:
                    moved = a.id if a.id in out else other
                    with_ = other if moved == a.id else a.id
                    raise ValueError(f"{where}: {moved} = {key!r} clashes with {with_} on "
                                     f"{SCOPE_TITLES.get(scope, 'the dialogs')}")
    return out


# -- what the help screen, the palette and the docs show -------------------------------------------
def scope_title(scope: str) -> str:
    """A scope's title in the operator's language ("1 Cases" keeps its number)."""
    if scope in TAB_IDS:
        n = TAB_IDS.index(scope) + 1
        return f"{n} {_(TABS[n - 1][1])}"
    return _(SCOPE_TITLES[scope])


def help_rows(scope: str, keymap: Mapping[str, str] | None = None) -> list[tuple[str, str, str]]:
    """(keys, id, what it does) for every action of ``scope``, with the keys in force."""
    rows = []
    for a in in_scope(scope):
        rows.append((key_label(keys_of(a, keymap)), a.id, (a.shown_title if a.title else _(a.description))
                     + needs_words(a)))
    return rows


def needs_words(action: Action) -> str:
    """What an action needs before it runs: a role to sign it, a state of the screen."""
    role = _("the %(role)s role", role=action.role) if action.role else ""
    state = _(action.needs) if action.needs else ""
    if role and state:
        return _("; needs %(role)s and %(state)s", role=role, state=state)
    return _("; needs %(what)s", what=role or state) if role or state else ""


def who_may() -> list[tuple[str, str, str]]:
    """(action id, role, what the role lets sign): every signed action and the role it needs."""
    return [(a.id, a.role, roles.WHAT[a.role]) for a in ACTIONS if a.signs and a.role]


def palette_entries() -> list[Action]:
    return list(ACTIONS)


def matching_words(action: Action) -> tuple[str, ...]:
    """What else the palette finds an action by: its id, its synonyms, its commands, and its English
    title when the console speaks another language."""
    english = (action.palette_title,) if action.shown_title != action.palette_title else ()
    return (action.id.replace("_", " "), *english, *action.words, *action.cli)


def key_table_markdown() -> str:
    """The key table of docs/operator.md: every action, its default key, id and where it works."""
    lines = ["| key | id | what it does | where | signs (role) |", "|---|---|---|---|---|"]
    for a in ACTIONS:
        where = ", ".join(SCOPE_TITLES[s].split(" (")[0] for s in a.scopes)
        keys = " ".join(f"`{k}`" for k in key_label(a.keys).split(" "))
        what = (a.title or a.description).replace("|", "/")
        lines.append(f"| {keys} | `{a.id}` | {what} | {where} | {a.role if a.signs else '-'} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":  # python -m console.actions: the table for docs/operator.md
    print(key_table_markdown(), end="")
