"""The HTML check: which HTML and CSS features an e-mail's HTML uses that e-mail clients do
not (fully) support, from the caniemail.com data.

The data is the `caniemail` npm package's `caniemail.json` (MIT, data/caniemail.LICENSE beside
it), vendored in models/mail/checks/data and refreshed with `make caniemail-data`. Each feature has
support values per client family ("gmail", "outlook", "apple-mail"...), per platform and per
tested version: "y" (supported), "a" (partly, with numbered notes), "n" (not), "u" (unknown).

What is checked is the HTML as the sender wrote it (models.mail.ingest.parse.original_html), not the
sanitised body the API serves: sanitising drops style blocks, forms and scripts, which are
exactly what clients disagree on. Tags and attributes come from the stdlib HTML parser; CSS from
style attributes and <style> blocks through a small tokenizer (comments, at-rules, selectors'
pseudo-classes, declarations, !important, functions and units). Malformed HTML or CSS is read
as far as it goes: the check never fails on input.

Support of a feature in a family: each platform counts with its latest tested version; "y" on
every platform is supported, "n" on every platform unsupported, anything else partial;
platforms with only "u" are left out, and a family with no data on a feature does not count it.
A family's score is the share of the features used that it supports, partial support counting
half, in percent (100 when it counts none): `100 * (supported + partial / 2) / counted`, the
formula of Mailpit's HTML check over distinct features.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

DATA_FILE = Path(__file__).parent / "data" / "caniemail.json"
# The families shown, in this order: the clients most audiences read mail in first.
FAMILIES = ("apple-mail", "gmail", "outlook", "yahoo", "samsung-email", "thunderbird", "aol",
            "protonmail", "fastmail", "hey")

# Tags with a feature of their own under another name.
_TAG_FEATURES = {
    **{f"h{n}": "html-h1-h6" for n in range(1, 7)},
    "ul": "html-lists", "ol": "html-lists", "dl": "html-lists",
    **{tag: "html-semantics" for tag in ("article", "aside", "details", "figcaption", "figure",
                                         "footer", "header", "main", "mark", "nav", "section",
                                         "summary", "time")},
    "map": "html-image-maps",
}
# Attributes whose feature is `html-<name>`.
_PLAIN_ATTRIBUTES = frozenset({"role", "lang", "dir", "align", "valign", "width", "height",
                               "background", "cellpadding", "cellspacing", "hidden", "srcset",
                               "target", "required", "popover"})
_ATTRIBUTE_FEATURES = {"loading": "html-loading-attribute", "sizes": "html-srcset"}
_IMAGE_TYPES = {"jpeg": "jpg", "jpg": "jpg", "png": "png", "gif": "gif", "webp": "webp",
                "avif": "avif", "svg": "svg", "bmp": "bmp", "tif": "tiff", "tiff": "tiff",
                "ico": "ico", "apng": "apng", "heic": "heif", "heif": "heif"}
_CSS_UNITS = ("px", "em", "rem", "pt", "pc", "cm", "mm", "in", "ex", "ch", "vh", "vw", "vmin",
              "vmax")

_COMMENT = re.compile(r"/\*.*?(\*/|$)", re.DOTALL)
_AT_RULE = re.compile(r"@(-?[a-z][a-z-]*)", re.IGNORECASE)
_MEDIA_FEATURE = re.compile(r"\(\s*(-?[a-z][a-z-]*)", re.IGNORECASE)
_PSEUDO = re.compile(r"(::?)([a-z][a-z-]*)", re.IGNORECASE)
_DECLARATION = re.compile(r"(--[\w-]+|-?[a-z][a-z-]*)\s*:\s*([^;{}]*)", re.IGNORECASE)
_FUNCTION = re.compile(r"([a-z][a-z-]*)\(", re.IGNORECASE)
_UNIT = re.compile(r"\d(%|" + "|".join(_CSS_UNITS) + r")\b", re.IGNORECASE)
_NAME = re.compile(r"^-?[a-z][a-z-]*$")


@dataclass(frozen=True)
class Feature:
    """One caniemail feature: its slug, title, category, page, notes, and its support per
    family ("y", "a" or "n") with the notes that apply to it."""

    slug: str
    title: str
    category: str
    url: str
    support: dict[str, str]
    notes: dict[str, list[str]]


@dataclass
class _Index:
    """The features by what the e-mail shows of them."""

    features: dict[str, Feature] = field(default_factory=dict)
    css: dict[str, str] = field(default_factory=dict)  # property or "property:value" -> slug


def _family_support(platforms: dict[str, dict[str, str]], notes: dict[str, str]
                    ) -> tuple[str | None, list[str]]:
    """(support, notes) of a family from its platforms' latest tested versions."""
    latest: list[str] = []
    noted: list[str] = []
    for versions in platforms.values():
        if not versions:
            continue
        value = list(versions.values())[-1]
        letter, *marks = value.split()
        if letter in ("y", "a", "n"):
            latest.append(letter)
        for mark in marks:
            text = notes.get(mark.lstrip("#"))
            if text and text not in noted:
                noted.append(text)
    if not latest:
        return None, noted
    if all(letter == "y" for letter in latest):
        return "y", noted
    if all(letter == "n" for letter in latest):
        return "n", noted
    return "a", noted


@cache
def _index() -> _Index:
    """The vendored data, read once per process."""
    data = json.loads(DATA_FILE.read_text(encoding="utf-8"))
    index = _Index()
    for item in data["data"]:
        support: dict[str, str] = {}
        notes: dict[str, list[str]] = {}
        for family, platforms in (item.get("stats") or {}).items():
            value, noted = _family_support(platforms, item.get("notes_by_num") or {})
            if value is not None:
                support[family] = value
                notes[family] = noted
        feature = Feature(item["slug"], item["title"], item["category"], item["url"], support,
                          notes)
        index.features[feature.slug] = feature
    # A feature's own names (slug, title: "left, right, top, bottom") win over another's
    # keywords, of which only hyphenated ones are property names (border-top-width); single
    # words are search terms ("color" is a keyword of accent-color).
    for own in (True, False):
        for item in data["data"]:
            if item["category"] != "css":
                continue
            words = (item["title"] if own else item.get("keywords") or "").split(",")
            names = [word.replace(" ", "") for word in words if own or "-" in word]
            if own:
                names.append(item["slug"].removeprefix("css-"))
            for name in names:
                if _NAME.match(name) or (":" in name and _NAME.match(name.split(":")[0])):
                    index.css.setdefault(name.lower(), item["slug"])
    return index


class _Collector(HTMLParser):
    """Walks the HTML, noting feature slugs and gathering the CSS it carries."""

    def __init__(self, features: dict[str, Feature]) -> None:
        super().__init__(convert_charrefs=True)
        self.known = features
        self.found: set[str] = set()
        self.css: list[str] = []
        self.declarations: list[str] = []
        self._in_style = False

    def _note(self, slug: str) -> None:
        if slug in self.known:
            self.found.add(slug)

    def handle_decl(self, decl: str) -> None:
        if decl.lower().startswith("doctype"):
            self._note("html-doctype")

    def handle_comment(self, data: str) -> None:
        self._note("html-comments")

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._note(_TAG_FEATURES.get(tag, f"html-{tag}"))
        values = {name: value or "" for name, value in attrs}
        for name, value in values.items():
            if name == "style":
                self.declarations.append(value)
            elif name.startswith("aria-") or name in _PLAIN_ATTRIBUTES:
                self._note(f"html-{name}")
            elif name in _ATTRIBUTE_FEATURES:
                self._note(_ATTRIBUTE_FEATURES[name])
        href = values.get("href", "").strip().lower()
        if tag == "a" and href.startswith("#"):
            self._note("html-anchor-links")
        elif tag == "a" and href.startswith("mailto:"):
            self._note("html-mailto-links")
        if tag == "input":
            self._note(f"html-input-{values.get('type', 'text').lower()}")
        elif tag == "button":
            self._note(f"html-button-{values.get('type', 'submit').lower()}")
        elif tag == "meta" and values.get("name", "").lower() == "color-scheme":
            self._note("html-meta-color-scheme")
        elif tag == "img":
            self._image(values.get("src", ""))
        self._in_style = tag == "style"

    def _image(self, src: str) -> None:
        source = src.strip().lower()
        if source.startswith("data:"):
            self._note("image-base64")
            kind = source[5:].split(";", 1)[0].split(",", 1)[0].removeprefix("image/")
        else:
            kind = source.split("?", 1)[0].split("#", 1)[0].rpartition(".")[2]
        kind = kind.removesuffix("+xml")
        if kind in _IMAGE_TYPES:
            self._note(f"image-{_IMAGE_TYPES[kind]}")

    def handle_endtag(self, tag: str) -> None:
        self._in_style = False

    def handle_data(self, data: str) -> None:
        if self._in_style:
            self.css.append(data)


def _css_features(sheet: str, *, inline: bool, css: dict[str, str]) -> set[str]:
    """The CSS feature slugs a style sheet (or a style attribute's declarations) uses."""
    found: set[str] = set()
    if "/*" in sheet:
        found.add("css-comments")
        sheet = _COMMENT.sub(" ", sheet)
    if not inline:
        for at in _AT_RULE.findall(sheet):
            found.add(f"css-at-{at.lower()}")
        for media in re.findall(r"@media([^{]*)", sheet, re.IGNORECASE):
            found.update(f"css-at-media-{name.lower()}" for name in _MEDIA_FEATURE.findall(media))
        for selector in re.findall(r"(?:^|[{}])([^{}@;]*)\{", sheet):
            for colons, name in _PSEUDO.findall(selector):
                kind = "element" if colons == "::" else "class"
                found.add(f"css-pseudo-{kind}-{name.lower()}")
    for name, value in _DECLARATION.findall(sheet if inline else _blocks(sheet)):
        prop, value = name.lower(), value.strip().lower()
        if prop.startswith("--") or "var(" in value:
            found.add("css-variables")
        if "!important" in value:
            found.add("css-important")
            value = value.replace("!important", "").strip()
        slug = css.get(f"{prop}:{value}") or css.get(prop)
        if slug is None and "-" in prop:
            # A longhand without a feature of its own (margin-top) counts as its shorthand.
            slug = css.get(prop.split("-")[0])
        if slug is not None:
            found.add(slug)
        for function in _FUNCTION.findall(value):
            function = function.lower()
            found.update({f"css-{function}", f"css-function-{function}", f"css-unit-{function}"})
        for unit in _UNIT.findall(value):
            found.add("css-unit-percent" if unit == "%" else f"css-unit-{unit.lower()}")
    return found


def _blocks(sheet: str) -> str:
    """The declarations of every rule of `sheet`, one after the other (selectors and at-rule
    preludes dropped, so `a:hover {` is not read as a declaration)."""
    return ";".join(re.findall(r"\{([^{}]*)\}", sheet))


def check_html(markup: str) -> dict[str, Any]:
    """The check of `markup` (an e-mail's HTML): `{"html": true, "scores": [...],
    "issues": [...], "features_used": n}` as the module docstring describes; `{"html": false}`
    for empty markup."""
    if not markup.strip():
        return {"html": False}
    index = _index()
    collector = _Collector(index.features)
    # html.parser reads any text without raising (it reports what it cannot parse as data).
    collector.feed(markup)
    collector.close()
    found = set(collector.found)
    for sheet in collector.css:
        found |= _css_features(sheet, inline=False, css=index.css)
    for declarations in collector.declarations:
        found |= _css_features(declarations, inline=True, css=index.css)
    used = [index.features[slug] for slug in sorted(found) if slug in index.features]
    return {"html": True, "features_used": len(used), "scores": _scores(used),
            "issues": _issues(used)}


def _scores(used: Iterable[Feature]) -> list[dict[str, Any]]:
    """Per family: the score and the counts it comes from."""
    scores = []
    features = list(used)
    for family in FAMILIES:
        counted = [feature.support[family] for feature in features if family in feature.support]
        supported, partial = counted.count("y"), counted.count("a")
        score = 100.0 if not counted else 100 * (supported + partial / 2) / len(counted)
        scores.append({"family": family, "score": round(score, 1), "supported": supported,
                       "partial": partial, "unsupported": counted.count("n")})
    return scores


def _issues(used: Iterable[Feature]) -> list[dict[str, Any]]:
    """The features used that some family does not fully support, unsupported first."""
    issues = []
    for feature in used:
        families = {family: feature.support[family] for family in FAMILIES
                    if feature.support.get(family) in ("a", "n")}
        if not families:
            continue
        issues.append({
            "slug": feature.slug, "title": feature.title, "category": feature.category,
            "url": feature.url,
            "unsupported": [family for family, value in families.items() if value == "n"],
            "partial": [family for family, value in families.items() if value == "a"],
            "notes": {family: feature.notes[family] for family in families
                      if feature.notes.get(family)},
        })
    issues.sort(key=lambda issue: (-len(issue["unsupported"]), -len(issue["partial"]),
                                   issue["slug"]))
    return issues
