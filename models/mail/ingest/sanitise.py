"""The HTML bodies of incoming mail, by nh3's cleaners: made safe to show (`sanitise_html`,
what the parser stores as `body_html`) and read as text (`html_to_text`, what a reader reads
when a message has no text body, and where extraction finds codes and links)."""

from __future__ import annotations

import html
import re

import nh3

MAX_HTML_NESTING = 128  # open elements kept in body_html; deeper start tags are dropped

# Elements whose contents are removed along with them (the rest of the disallowed tags are
# stripped and their text kept).
_DROPPED_WITH_CONTENT = {"script", "style", "title", "template"}
_HTML_TAGS = set(nh3.ALLOWED_TAGS) | {"font"}


def _html_attributes() -> dict[str, set[str]]:
    """nh3's default attributes plus the presentation attributes table-based mail layouts rely
    on. Never id, name or class: a message must not be able to target the page that shows it."""
    attributes = {tag: set(names) for tag, names in nh3.ALLOWED_ATTRIBUTES.items()}
    for tag, names in {
        "*": {"style", "align", "valign", "width", "height", "bgcolor", "dir", "title", "lang"},
        "a": {"href"},
        "img": {"src", "alt", "border"},
        "font": {"color", "face", "size"},
        "table": {"border", "cellpadding", "cellspacing"},
        "td": {"nowrap"},
        "th": {"nowrap"},
    }.items():
        attributes.setdefault(tag, set()).update(names)
    return attributes


_STYLE_PROPERTIES = {
    "color", "background-color", "font", "font-family", "font-size", "font-style", "font-weight",
    "text-align", "text-decoration", "text-transform", "line-height", "letter-spacing",
    "vertical-align", "white-space", "width", "max-width", "min-width", "height", "max-height",
    "margin", "margin-top", "margin-right", "margin-bottom", "margin-left", "padding",
    "padding-top", "padding-right", "padding-bottom", "padding-left", "border", "border-top",
    "border-right", "border-bottom", "border-left", "border-color", "border-style",
    "border-width", "border-collapse", "border-spacing", "border-radius", "display",
}
_HTML_CLEANER = nh3.Cleaner(
    tags=_HTML_TAGS,
    clean_content_tags=_DROPPED_WITH_CONTENT,
    attributes=_html_attributes(),
    link_rel="noopener noreferrer",
    set_tag_attribute_values={"a": {"target": "_blank"}},
    # cid: points at an inline attachment. Relative URLs are dropped: in a message they could
    # only resolve against the page showing it, i.e. our own service.
    url_schemes={"http", "https", "mailto", "tel", "cid"},
    url_relative="deny",
    filter_style_properties=_STYLE_PROPERTIES,
    strip_comments=True,
)
_TEXT_CLEANER = nh3.Cleaner(tags=set(), clean_content_tags=_DROPPED_WITH_CONTENT, attributes={})
# Void elements and elements whose end tag is optional never deepen the tree for long; every
# other element counts towards MAX_HTML_NESTING.
_FLAT_ELEMENTS = frozenset(
    {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param",
     "source", "track", "wbr", "p", "li", "dt", "dd", "option", "optgroup", "tr", "td", "th",
     "tbody", "thead", "tfoot", "colgroup", "caption", "rb", "rt", "rtc", "rp"}
)
# A tag up to its '>' or the next '<', so a '<' without '>' costs one scan, not one per '<'.
_TAG = re.compile(r"<(/?)([a-zA-Z][^\s/<>]*)[^<>]*>?")
# Where a start tag may begin: at least as many as _TAG finds start tags.
_START_TAG = re.compile(r"<[a-zA-Z]")
# HTML's white space is these five characters (a no-break space is text, never collapsed).
_HTML_WHITESPACE = re.compile(r"[ \t\n\r\f]+")
_SPACES = re.compile(" {2,}")
_PRE_TAG = re.compile(r"<pre\b", re.I)
_HTML_WHITESPACE_OUTSIDE_PRE = re.compile(r"(<pre\b.*?</pre\s*>)|[ \t\n\r\f]+", re.I | re.S)
# Where a line break goes in the text of HTML: before block-level start and end tags (a lookahead,
# so the tag itself is left for the cleaner to strip).
_BLOCK_TAG = re.compile(r"(?=</?(?:p|div|br|li|tr|td|th|h[1-6]|blockquote|pre|table|ul|ol)\b)",
                        re.I)


def _limit_nesting(markup: str) -> str:
    """`markup` with start tags beyond MAX_HTML_NESTING open elements removed.

    The HTML parser inside nh3 takes time proportional to tags x open elements (20,000 nested
    <div>s take 16 s), so the depth is bounded first. The count is approximate (a tag-level scan,
    not a tree builder) and errs towards counting too many, which only flattens hostile markup.
    """
    if len(_START_TAG.findall(markup)) <= MAX_HTML_NESTING:
        # Fewer start tags than the bound can never open too many elements: skip the scan.
        return markup
    depth = 0
    kept: list[str] = []
    last = 0
    for match in _TAG.finditer(markup):
        closing, name = match.group(1), match.group(2).lower()
        if name in _FLAT_ELEMENTS:
            continue
        if closing:
            depth = max(0, depth - 1)
        elif depth >= MAX_HTML_NESTING:
            kept.append(markup[last:match.start()])
            last = match.end()
        else:
            depth += 1
    kept.append(markup[last:])
    return "".join(kept)


def sanitise_html(markup: str) -> str:
    """Safe HTML for display: no scripts, styles blocks, event handlers, forms, frames, embeds,
    javascript:/data:/relative URLs or ids; links open in a new tab with rel="noopener noreferrer";
    inline styles limited to layout and typography properties; nesting bounded."""
    return _HTML_CLEANER.clean(_limit_nesting(markup))


def html_to_text(markup: str) -> str:
    """The readable text of (sanitised) HTML as a browser renders it: each run of white space
    in the source one space (in mail with a `<pre>`, that element's kept as written and runs
    across inline tags not joined), line breaks around block elements only. A template's
    indentation is not text: read as written, it put hundreds of characters between a label
    and the code it announces."""
    if _PRE_TAG.search(markup) is None:  # nearly all mail
        # In ASCII, str.split's white space is HTML's (and \v and \x1c-\x1f, control
        # characters no text of mail holds), and five times faster than the substitution.
        collapsed = (" ".join(markup.split()) if markup.isascii()
                     else _HTML_WHITESPACE.sub(" ", markup))
        text = _TEXT_CLEANER.clean(_BLOCK_TAG.sub("\n", collapsed))
        # A run also spans the inline tags the cleaner took out ("a <b> b" shows one space).
        return html.unescape(_SPACES.sub(" ", text) if "  " in text else text)
    rendered = _HTML_WHITESPACE_OUTSIDE_PRE.sub(lambda run: run.group(1) or " ", markup)
    return html.unescape(_TEXT_CLEANER.clean(_BLOCK_TAG.sub("\n", rendered)))
