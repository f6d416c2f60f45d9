"""The e-mail's unsubscribe offer: its `List-Unsubscribe` header (RFC 2369) and the one-click
form of RFC 8058 (`List-Unsubscribe-Post`), read and checked as a mail client would.

- `List-Unsubscribe` is a comma-separated list of URIs, each in angle brackets; a client uses
  the first it can: a `mailto:` address to write to, or an http(s) page.
- One-click (RFC 8058) needs both: an `https` URI in `List-Unsubscribe`, and
  `List-Unsubscribe-Post: List-Unsubscribe=One-Click`, so the client unsubscribes with one POST
  and no page to fill in. The RFC also asks for a DKIM signature covering both headers, which
  is checked against the `h=` of the message's DKIM signatures (whether a signature verifies is
  the authentication results' business).

Computed from the stored headers whenever the detail is read: it is a few string operations,
and nothing stored can fall out of step with it. Hostile headers give problems in words, never
an error.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from email.utils import parseaddr
from typing import Any
from urllib.parse import unquote, urlsplit

ONE_CLICK = "List-Unsubscribe=One-Click"
MAX_URIS = 10
MAX_URI = 2048
_BRACKETED = re.compile(r"<([^<>]*)>")
_MAILBOX = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+")


def check_unsubscribe(headers: Sequence[Sequence[str]]) -> dict[str, Any] | None:
    """The unsubscribe offer of a message whose headers are `headers` ([name, value] pairs in
    message order), None when it has no `List-Unsubscribe` header:
    {header, post, links: [{uri, scheme, valid}], one_click, problems: [sentence...]}."""
    values = [value for name, value in headers if name.lower() == "list-unsubscribe"]
    posts = [value for name, value in headers if name.lower() == "list-unsubscribe-post"]
    if not values:
        return _post_without_header(posts)
    problems: list[str] = []
    if len(values) > 1:
        problems.append(f"{len(values)} List-Unsubscribe headers: a client reads only one")
    header = values[0]
    links = _links(header, problems)
    post = posts[0] if posts else None
    https = [link for link in links if link["scheme"] == "https" and link["valid"]]
    one_click = bool(https) and post is not None and _is_one_click(post)
    if post is not None and not _is_one_click(post):
        problems.append(f"List-Unsubscribe-Post should be exactly \"{ONE_CLICK}\"")
    if post is not None and not https:
        problems.append("List-Unsubscribe-Post is present but List-Unsubscribe has no https "
                        "URI to POST to (RFC 8058)")
    if https and post is None:
        problems.append("no List-Unsubscribe-Post header: one-click unsubscribe (RFC 8058) is "
                        "not offered, which large mailbox providers ask of bulk senders")
    if one_click and not _signed(headers):
        problems.append("no DKIM signature covers both List-Unsubscribe and "
                        "List-Unsubscribe-Post, as RFC 8058 requires for one-click")
    return {"header": header, "post": post, "links": links, "one_click": one_click,
            "problems": problems}


def _post_without_header(posts: list[str]) -> dict[str, Any] | None:
    if not posts:
        return None
    return {"header": None, "post": posts[0], "links": [], "one_click": False,
            "problems": ["List-Unsubscribe-Post without a List-Unsubscribe header"]}


def _is_one_click(post: str) -> bool:
    return post.strip() == ONE_CLICK


def _links(header: str, problems: list[str]) -> list[dict[str, Any]]:
    """Each bracketed URI of the header, judged; problems for what a client could not use."""
    found = _BRACKETED.findall(header)
    if not found:
        problems.append("List-Unsubscribe has no URI in angle brackets")
        return []
    if len(found) > MAX_URIS:
        problems.append(f"List-Unsubscribe lists {len(found)} URIs; only the first "
                        f"{MAX_URIS} are shown")
    links = []
    for uri in found[:MAX_URIS]:
        uri = "".join(uri.split())  # folding white space inside the brackets is not the URI's
        scheme, valid, problem = _judge(uri)
        if problem:
            problems.append(problem)
        links.append({"uri": uri[:MAX_URI], "scheme": scheme, "valid": valid})
    return links


def _judge(uri: str) -> tuple[str, bool, str]:
    """(scheme, usable, the problem in words or "") of one URI."""
    try:
        parts = urlsplit(uri)
    except ValueError:
        return "", False, f"{uri[:100]!r} is not a URI"
    scheme = parts.scheme.lower()
    if scheme == "mailto":
        address = parseaddr(unquote(parts.path))[1]
        if not _MAILBOX.fullmatch(address):
            return scheme, False, f"the mailto URI {uri[:100]!r} names no address"
        return scheme, True, ""
    if scheme in ("http", "https"):
        if not parts.hostname:
            return scheme, False, f"the {scheme} URI {uri[:100]!r} names no host"
        if scheme == "http":
            return scheme, True, (f"{uri[:100]!r} is plain http: one-click unsubscribe needs "
                                  "https")
        return scheme, True, ""
    return scheme, False, f"{uri[:100]!r}: only mailto, http and https URIs can be used"


def _signed(headers: Sequence[Sequence[str]]) -> bool:
    """Whether some DKIM-Signature's h= names both unsubscribe headers."""
    for name, value in headers:
        if name.lower() != "dkim-signature":
            continue
        tags = dict(part.strip().partition("=")[::2] for part in value.split(";"))
        signed = {field.strip().lower() for field in "".join(tags.get("h", "").split()).split(":")}
        if {"list-unsubscribe", "list-unsubscribe-post"} <= signed:
            return True
    return False
