"""URLs as they may be shown: a URL's user name, password and query values can be secrets (an
alert hook's ``?token=``, a PostgreSQL password), so everything but ``config.toml`` shows the
masked form from here: log lines, stderr, JSON output, the outbox, events sent to a target."""

from __future__ import annotations

from urllib.parse import parse_qsl, quote, unquote, urlsplit, urlunsplit

MASK = "***"


def mask_url(url: str) -> str:
    """``url`` with its userinfo and every query value (and any fragment) replaced by ``***``.

    The scheme, host, port, path and query keys stay, so an operator can still tell which
    address is meant. Something that does not parse as a URL is masked whole after its scheme.
    """
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = parts.port
    except ValueError:
        scheme = url.partition("://")[0] if "://" in url else ""
        return f"{scheme}://{MASK}" if scheme.isalnum() else MASK
    if ":" in host:
        host = f"[{host}]"
    netloc = host + (f":{port}" if port is not None else "")
    if "@" in parts.netloc:
        netloc = f"{MASK}@{netloc}"
    query = "&".join(f"{quote(key, safe='')}={MASK}" for key, _value in
                     parse_qsl(parts.query, keep_blank_values=True))
    if parts.query and not query:
        query = MASK
    return urlunsplit((parts.scheme, netloc, parts.path, query, MASK if parts.fragment else ""))


def secrets_of(url: str) -> list[str]:
    """The pieces of ``url`` that must never be shown: its userinfo, password and query values."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return [url]
    found = []
    if "@" in parts.netloc:
        found.append(parts.netloc.rpartition("@")[0])
        if parts.password:
            found.append(parts.password)
    found += [value for _key, value in parse_qsl(parts.query, keep_blank_values=True) if value]
    found += [pair.partition("=")[2] for pair in parts.query.split("&")]  # as written, percent-escapes and all
    if parts.fragment:
        found.append(parts.fragment)
    found += [unquote(s) for s in found]  # as a library may quote them: decoded
    return sorted({s for s in found if len(s) >= 3}, key=len, reverse=True)


def mask_in(text: str, url: str) -> str:
    """``text`` (an error message, a library's exception) with ``url`` and its secrets masked:
    a message that quotes the URL, or any piece of it, cannot leak it."""
    text = text.replace(url, mask_url(url))
    for secret in secrets_of(url):
        text = text.replace(secret, MASK)
    return text
