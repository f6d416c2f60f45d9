"""Links and one-time codes found in a parsed message, for tests that wait for a sign-up or
sign-in e-mail and need its code or its magic link.

Both are pure functions over text the parser already produced, and both stay cheap: links are
one pass of two regular expressions, and codes are looked for only in short windows around the
words that announce them (code, OTP, PIN, verification... in the languages identity products
ship: the Western European ones, Scandinavian, Polish, Czech, Hungarian, Finnish, Turkish,
Russian, Ukrainian, Greek, Arabic, Persian, Hebrew, Hindi, Vietnamese, Indonesian, Malay, Thai,
Chinese, Japanese and Korean), never over the whole body. For mail without a text part, both
read the HTML's text as a browser renders it (`models.mail.ingest.sanitise.html_to_text`: a
template's indentation is one space), so distances are measured in what a reader sees; a URL written
there as text, outside any anchor, is a link.
docs/testing-with-burnbox.md states the rules, and tests/corpus/ measures them on corpora of
transactional e-mails and of e-mails modelled on sign-in products.

Codes:
- a candidate is a 4-8 digit number (a `123 456` or `123-456` pair and a `482-913-107` triple
  count, stored without the separators), a 5-12 character token of letters and digits with at
  least one of each, as printed (`K7P-2QX`), or 5-12 capital consonants in dash-joined groups,
  as printed (`BKTX-QRMZ`; alone on its line they need no dash: `FQTKM`). Consonants only,
  because that is the alphabet sign-in products draw letter codes from so that no code spells
  a word (RFC 8628 recommends it), and a capitalised word of prose always has a vowel
  ("HTTPS" aside, which is why a lone group counts only on a line of its own);
- it must stand after such a word on its line (within `AFTER` characters), alone on the next
  non-empty line (separator lines such as `-----` or `* * *` in between are skipped and not
  counted in the distance), or before the word on its line (within `BEFORE` characters:
  "482913 is your code"); each word takes the nearest candidate after it, else the nearest
  before it;
- links are not read: a URL is blanked out before the search, so neither the ids in a query
  string (`?flow=<uuid>&code=902847`) nor the word "code" in it can make a code;
- never a year (1900-2099), a quantity with a unit (`21976k`, `250ms`), part of a date, time,
  price, phone number or other digit group
  (a neighbour digit across `.`, `,`, `:`, `/`, `-` or a space), an amount next to a currency,
  a number after `#`, `+` or a phone word, a postcode or house number (a number followed by a
  capitalised word, or after a two-letter state code);
- a word that names another kind of code does not count: promo/discount/coupon codes, postal
  codes, QR codes, status codes, in the other languages too (QRコード, 할인 코드, промокод, kode
  pos, indirim kodu, الرمز البريدي, पिन कोड...).

Chinese, Japanese and Thai write no spaces and Korean particles join a number, so a number
right next to kana, kanji, hangul or Thai letters ("コードは482913です", "[582931]입니다") is
still a whole token.
"""

# The words of other scripts hold letters that look like Latin ones: they are what they say.
# ruff: noqa: RUF001

from __future__ import annotations

import html
import re
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import islice

MAX_LINKS = 200
MAX_HREF_CHARS = 2_048
MAX_LINK_TEXT_CHARS = 200
MAX_CODES = 20
MAX_CODE_WORDS = 1_000  # code words looked at per subject or body
AFTER = 70  # characters after a code word searched for its code on the word's line
# Characters after a code word within which a code alone on a later line may start (separator
# lines not counted): an announcing sentence often goes on after its word ("Your sign-in code is
# listed below. Please enter it in your open browser window.") and German runs longer still.
ALONE_AFTER = 130
BEFORE = 40  # characters before a code word searched when nothing follows it

# Sanitised HTML (nh3) always quotes attribute values with double quotes and escapes them,
# and closes every anchor with exactly "</a>".
_ANCHOR = re.compile(r'<a\s[^>]*?\bhref="([^"]*)"[^>]*>')
_TAG = re.compile(r"<[^>]*>")
_PARTIAL_TAG = re.compile(r"<[^>]*$")
_URL = re.compile(r"https?://[^\s<>\"'()\[\]{}]+", re.IGNORECASE)
_URL_TRAILING = ".,;:!?'\"*"

# The words that announce a code, searched in lower-cased text (an IGNORECASE search is three
# times slower). Those of the first part need no word boundary before them: compounds end in
# them (Bestätigungscode, verifieringskod), prefixes join them (Arabic الرمز, Hebrew הקוד), and
# Chinese, Japanese, Korean particles and Thai put no space around them. Those of the second
# part stand as words of their own.
_JOINED_CODE_WORDS = (
    r"cod(?:es?|igos?|ice|ici|ul)(?!\w)|c[oó]digos?(?!\w)|"
    # Scandinavian, Polish, Czech, Turkish, Hungarian, Indonesian, Malay; Finnish.
    r"k[oó]d(?:e|en|er|enya|u|un|unuz|unuzu|em|y|ot|ja)?(?!\w)|koodi(?!\w)|"
    # Japanese: code, one-time password, authentication / confirmation number, PIN.
    r"コード|ワンタイムパスワード|認証番号|確認番号|暗証番号|"
    # Chinese, simplified and traditional: verification, check, dynamic, security,
    # confirmation, authentication and sign-in codes; dynamic and one-time passwords.
    r"(?:[验驗][证證証]|校[验驗]|[动動][态態]|安全|[确確][认認]|[认認][证證]|登[录入錄])[码碼]|"
    r"(?:[动動][态態]|一次性)密[码碼]|"
    # Korean: code (인증 코드, 보안 코드), authentication / confirmation number, one-time.
    r"코드|인증\s?번호|확인\s?번호|일회용|"
    # Thai: verification, sign-in and security codes, one-time passwords; the bare word only
    # before a character that is not Thai (รหัสผ่าน alone is a password, รหัสไปรษณีย์ a postcode).
    r"รหัส(?:ยืนยัน|การยืนยัน|ผ่านแบบใช้ครั้งเดียว|ผ่านครั้งเดียว|เข้าสู่ระบบ|ความปลอดภัย"
    r"|(?![\u0e00-\u0e7f]))|"
    # Arabic (رمز التحقق, الرمز, رمزك), Persian (کد تأیید), Hebrew (קוד אימות, הקוד).
    r"(?:رمز|كود|کد)(?:ك|كم|ه)?(?!\w)|קוד(?!\w)")
_WORD_CODE_WORDS = (
    r"otp|pin|tan|passcode|verification|verify|v[ée]rification|verificaci[oó]n|verifizierung|"
    r"verifica|one[- ]time|einmal\w*|usage unique|un solo uso|uso [uú]nico|eenmalige|"
    # Russian, Ukrainian, Bulgarian: code (код подтверждения, кода), one-time.
    r"код(?:а|у|ом|ы|и)?|однораз\w*|"
    # Polish one-time; Turkish single-use; Vietnamese verification, confirmation, sign-in and
    # security codes; Hindi code, OTP, verification; Greek code.
    r"jednorazow\w*|tek kullanımlık|mã (?:xác minh|xác thực|xác nhận|đăng nhập|bảo mật)|"
    r"कोड|ओटीपी|सत्यापन|κωδικ(?:ός|ό|ού|οί)")
# Where a code word can start: every word of the patterns begins with one of these stems, each
# a literal first character and what must follow it. A search for them skips text in C, several
# times faster than trying the whole pattern at every position. A class as a stem's first
# character makes re try every stem at every position (measured on the corpora: the scan 3.5
# times slower), and one search for every script's stems costs ASCII text 1.9 times what the
# Latin stems do. A stem must not hide the start
# of a word of the first part inside it (the search goes on after the stem, so "确认证码" must
# not be read as 确认 first, and "tek kod" not as "tek k"): the stems are as long as that needs.
_LATIN_STEMS = (
    "c[oó]d", "o(?:tp|ne)", "p(?:in|as)", "t(?:an|ek ku)", "v[eé]r", "e(?:in|en)",
    "u(?:sa|n |so)", "k(?:o[do]|ód)", "jednoraz", "mã ")
# ... and those of the other scripts, searched for only in text that is not ASCII.
_OTHER_SCRIPT_STEMS = (
    # The Chinese and Japanese ones are whole words: their characters start other words.
    "コード", "ワンタイムパスワード", "認証番号", "暗証番号", "確認番号", "验[证證証][码碼]",
    "驗[证證証][码碼]", "校[验驗][码碼]", "动[态態]密?[码碼]", "動[态態]密?[码碼]", "安全[码碼]",
    "确[认認][码碼]", "確[认認][码碼]", "认[证證][码碼]", "認[证證][码碼]", "登[录入錄][码碼]",
    "一次性密[码碼]", "코드", "인증", "확인\\s?번", "일회용", "รหัส", "رمز", "كود", "کد", "קוד",
    "код", "однораз", "कोड", "ओटीपी", "सत्यापन", "κωδικ")
_LATIN_STEM = re.compile("|".join(_LATIN_STEMS))
_OTHER_SCRIPT_STEM = re.compile("|".join(_OTHER_SCRIPT_STEMS))
# The lookahead lets a search of the whole pattern skip positions that cannot start a word.
_CODE_WORD_FIRST = "".join(sorted({stem[0] for stem in _LATIN_STEMS + _OTHER_SCRIPT_STEMS}))
_CODE_WORD_PATTERN = (
    f"(?=[{_CODE_WORD_FIRST}])"
    f"(?:{_JOINED_CODE_WORDS}|(?<!\\w)(?:{_WORD_CODE_WORDS})(?!\\w))")
_CODE_WORD = re.compile(_CODE_WORD_PATTERN)
# For the rare text whose lower-casing changes its length (offsets would shift).
_CODE_WORD_ANY_CASE = re.compile(_CODE_WORD_PATTERN, re.IGNORECASE)
# Compounds and neighbours that make a code word name another kind of code.
_OTHER_CODES = frozenset({
    "postcode", "zipcode", "barcode", "qrcode", "sourcecode", "quellcode", "statuscode",
    "gutscheincode", "rabattcode", "promocode", "aktionscode", "couponcode", "vouchercode",
    "discountcode", "dresscode", "colorcode", "farbcode", "postleitcode", "promotiecode",
    "kortingscode", "fehlercode", "errorcode", "unicode", "decode", "encode", "opcode",
    "geocode",
    # ... in Scandinavian, Turkish and Hebrew (מיקוד is a postcode)
    "rabattkod", "rabattkode", "rabatkode", "kampanjkod", "kampanjekode", "kampagnekode",
    "presentkod", "gavekode", "kuponkode", "kupongkode", "promokod", "promokode", "felkod",
    "fejlkode", "feilkode", "källkod", "kildekode", "streckkod", "stregkode", "strekkode",
    "qrkod", "qrkode", "barkod", "barkodu", "postkod", "postkode", "מיקוד"})
# The word before a code word that makes it another kind (whole words, or their beginnings).
_OTHER_WORDS = frozenset({
    "discount", "coupon", "voucher", "gift", "rabatt", "aktions", "réduction", "reduction",
    "descuento", "cupón", "cupon", "sconto", "postal", "zip", "post", "qr", "source", "status",
    "error", "fehler", "korting", "referral", "invite", "invitation", "tracking", "booking",
    # Turkish, Russian, Korean, Hindi (a PIN code is a postcode in India)
    "indirim", "kupon", "promosyon", "posta", "hata", "davet", "referans", "hediye", "kampanya",
    "takip", "kargo", "почтовый", "подарочный", "할인", "쿠폰", "프로모션", "추천", "추천인",
    "초대", "오류", "에러", "상품", "우편", "배송", "주문", "पिन", "प्रोमो", "कूपन", "डिस्काउंट",
    "रेफरल"})
_OTHER_PREFIXES = ("promo", "gutschein", "sendungs")
# Japanese and Korean compounds end in コード or 코드 with the kind of code before it, in the
# same run of letters (product and member codes are ids, not one-time codes).
_OTHER_JAPANESE = ("qr", "クーポン", "プロモ", "プロモーション", "キャンペーン", "招待", "紹介",
                   "割引", "ギフト", "バー", "郵便", "追跡", "ソース", "エラー", "ステータス",
                   "商品", "会員")
_OTHER_KOREAN = ("qr", "할인", "쿠폰", "프로모션", "추천", "추천인", "초대", "오류", "에러", "상품",
                 "우편", "배송", "주문", "바", "회원", "소스", "상태")
# The words after a code word that make it another kind ("code promo", "kode pos", "kod
# rabatowy"), grouped by first letter: each alternative is one more test at every code word.
_OTHER_AFTER = re.compile(
    r"[\s:-]*(?:p(?:romo\w*|ostal|os(?!\w)|ocztow\w*)|r(?:abat(?:t|ow\w*)|eferr?al)|"
    r"d(?:e (?:r[ée]duction|descuento|promoci[oó]n|parrainage|seguimiento|suivi)|i sconto|"
    r"iskon)|b(?:ooking|łędu)|voucher|kupon|qr)", re.IGNORECASE)
# ... and so do Russian, Arabic, Hebrew and Greek: tried only when what follows is not ASCII
# (each alternative is one more test at every code word).
_OTHER_AFTER_IN_SCRIPTS = re.compile(
    r"[\s:-]*(?:скидки|купона|ошибки|страны|региона|приглашения|товара|заказа|"
    r"البريدي|بريدي|الخصم|خصم|ترويجي|الترويجي|القسيمة|قسيمة|الكوبون|كوبون|الدعوة|دعوة|الإحالة|"
    r"إحالة|الخطأ|خطأ|الدولة|الاستجابة|הנחה|קופון|קידום|שגיאה|έκπτωσης|κουπονιού|προσφοράς)",
    re.IGNORECASE)

# A letter or digit of a word that a token must not touch; kana, kanji, hangul and Thai letters
# do not count, since Chinese, Japanese and Thai put no space between a number and their words
# ("コードは482913です", "验证码为482917") and Korean particles join it ("[582931]입니다").
_WORD_CHAR = (r"[^\W\u0e00-\u0e7f\u1100-\u11ff\u3040-\u30ff\u3130-\u318f\u3400-\u4dbf"
              r"\u4e00-\u9fff\uac00-\ud7af]")
_CONSONANTS = "[B-DF-HJ-NP-TV-Z]"  # capitals without a vowel
# Tokens with a digit, and groups of capital consonants: the only ones that can be codes.
_CANDIDATE = re.compile(
    rf"(?<!{_WORD_CHAR})(?<![@/\\&=?%+#$€£¥])"
    r"(?:\d{3}[ -]\d{3}(?:[ -]\d{3})?"
    r"|(?:[A-Za-z0-9]+-)*[A-Za-z]*\d[A-Za-z0-9]*(?:-[A-Za-z0-9]+)*"
    rf"|{_CONSONANTS}+(?:-{_CONSONANTS}+)*)"
    rf"(?!{_WORD_CHAR})(?![@/\\&=?%])")
# A line of nothing but three or more rule characters ("-----", "* * *", "━━━━").
_SEPARATOR_LINE = r"[^\S\n]*(?:[-_=*~.#•·━─═][^\S\n]*){3,}\n"
SEPARATOR_CHARS = 200  # separator characters skipped, at most, between a code word and its code
# The next non-empty line when it holds one token and nothing else, after any separator lines
# (group 1: the skipped separators, group 2: the token).
_ALONE = re.compile(rf"\s*\n((?:{_SEPARATOR_LINE}\s*)*)[^\S\n]*(\d{{3}} \d{{3}}(?: \d{{3}})?|\S+)"
                    r"[^\S\n]*(?:\n|$)")
_DIGIT = re.compile(r"\d")
_CONSONANT_RUN = re.compile(f"{_CONSONANTS}{{3}}")
_ASCII_DIGITS = "0123456789"
# For bytes.translate: 1 for a capital consonant (what _CONSONANTS matches), 0 for any other.
_CAPITAL_CONSONANTS = bytes(int(re.fullmatch(_CONSONANTS, chr(code)) is not None)
                            for code in range(256))
_DIGIT_GROUPS = re.compile(r"\d{3}([ -])\d{3}(?:\1\d{3})?")  # "482 913", "482-913-107"
_LETTER_CODE = re.compile(rf"{_CONSONANTS}+(?:-{_CONSONANTS}+)*")
# A number with a unit: "4126k", "64kb", "250ms", "1080p" ("21976k reserved" is no code).
_QUANTITY = re.compile(r"\d+[a-z]{1,3}")
_YEAR = re.compile(r"(?:19|20)\d\d")
_PREFIXED = re.compile(r"[A-Za-z]{1,3}-(\d{4,8})")  # "G-482913": the digits are typed
_CURRENCY = r"(?:€|\$|£|¥|eur|euro|euros|usd|gbp|chf|kr|dollars?)"
_PRICE_BEFORE = re.compile(_CURRENCY + r"\s?$", re.IGNORECASE)
_PRICE_AFTER = re.compile(r"^\s?(?:" + _CURRENCY + r"|%)(?!\w)", re.IGNORECASE)
_PHONE_BEFORE = re.compile(
    r"(?:tel|phone|telefon|t[ée]l[ée]phone|tel[ée]fono|telefono|fax|mobile|mobil|call|ruf|"
    r"appel\w*|llam\w*|ending in|endet auf|terminant par|terminad[ao] en)\W{0,3}\S{0,4}\s?$",
    re.IGNORECASE)
# Every word _PHONE_BEFORE starts with, lower-cased: most windows hold none, and a plain search
# for them is far cheaper than the pattern's search from every position.
_PHONE_WORD_START = re.compile(r"tel|tél|phone|fax|mobil|call|ruf|appel|llam|ending in|endet auf|"
                               r"terminant par|terminad")
_STATE_BEFORE = re.compile(r"\b[A-Z]{2}\s$")
_CAPITALISED_AFTER = re.compile(r"^ [A-ZÀ-Ý][a-zà-ÿß]")
_DIGIT_NEIGHBOUR_BEFORE = re.compile(r"\d[.,:/ -]$|\d$")
_DIGIT_NEIGHBOUR_AFTER = re.compile(r"^[.,:/ -]\d")


@dataclass(frozen=True)
class Link:
    """A link of the message: where it goes, and the text it is shown with ("" in plain text)."""

    href: str
    text: str


def extract_links(body_text: str, body_html: str, html_text: str = "") -> tuple[Link, ...]:
    """The http(s) links of the sanitised HTML body (with their text) and of the text body,
    each href once, in document order: the HTML's first, then the text part's new ones.

    `html_text` is the HTML body's rendered text, given when the message has no text part: a
    URL written there as text, outside any anchor ("copy this address into your browser:
    https://..."), is a link too, with text "". A URL that is an anchor's own text is that
    anchor's, already found (its href may differ: a click-tracking redirect)."""
    found: dict[str, Link] = {}
    close = -1
    for match in _ANCHOR.finditer(body_html):
        if len(found) >= MAX_LINKS:
            break
        # The closing tags are found in one forward pass, never searched from every anchor.
        if close < match.end():
            close = body_html.find("</a>", match.end())
            if close < 0:
                break
        href = html.unescape(match.group(1)).strip()[:MAX_HREF_CHARS]
        if href not in found and _URL.fullmatch(href):
            inner = body_html[match.end():min(close, match.end() + 4_000)]
            if "<" in inner:
                inner = _TAG.sub(" ", _PARTIAL_TAG.sub("", inner))
            text = " ".join(html.unescape(inner).split())
            found[href] = Link(href, text[:MAX_LINK_TEXT_CHARS])
    _add_written_urls(found, body_text)
    if "://" in html_text:  # most HTML-only mail: every URL is an anchor's, none written as text
        shown = "\n".join(link.text for link in found.values())
        _add_written_urls(found, html_text, shown)
    return tuple(found.values())


def _add_written_urls(found: dict[str, Link], text: str, shown: str = "") -> None:
    """Add to `found` (up to MAX_LINKS) the URLs written in `text` it does not hold yet, with
    text "", except those that stand in `shown` (the anchors' texts)."""
    # Most text parts hold no link at all: one search in C instead of the pattern's scan.
    urls = _URL.finditer(text) if "://" in text else ()
    for match in urls:
        href = match.group().rstrip(_URL_TRAILING)[:MAX_HREF_CHARS]
        if len(found) >= MAX_LINKS:
            break
        if not (shown and href[:MAX_LINK_TEXT_CHARS] in shown):
            found.setdefault(href, Link(href, ""))


def extract_codes(subject: str, text: str) -> tuple[str, ...]:
    """The one-time codes announced in the subject and the readable body, in order, each once
    (see the module docstring for what counts)."""
    found: dict[str, None] = {}
    for source in (subject, text):
        # No digit (nor capital consonants), no code: a subject such as "Verify your e-mail"
        # costs one scan in C.
        if not _text_may_hold_code(source):
            continue
        source = _without_links(source)
        spans = _code_words(source)
        for index, (start, end) in enumerate(spans):
            if len(found) >= MAX_CODES:
                break
            # Nothing a code is made of near the word, no code: most code words are skipped
            # here, cheaply.
            reach = end + ALONE_AFTER + SEPARATOR_CHARS
            if not _may_hold_code(source, max(0, start - BEFORE), reach):
                continue
            # "…code" matched at its end: the whole word starts where the letters do.
            floor = max(0, start - 30)
            while start > floor and source[start - 1].isalnum():
                start -= 1
            if _names_another_code(source, start, end):
                continue
            following = spans[index + 1][0] if index + 1 < len(spans) else len(source)
            code = _nearest_code(source, start, end, following)
            if code is not None:
                found.setdefault(code, None)
    return tuple(found)


def _may_hold_code(text: str, start: int, end: int) -> bool:
    """Whether text[start:end] holds something a code is made of: a digit, or three capital
    consonants. Two searches in C, the second rarely needed: one search for either runs the
    pattern at every position and costs several times more."""
    return (_DIGIT.search(text, start, end) is not None
            or _CONSONANT_RUN.search(text, start, end) is not None)


def _text_may_hold_code(text: str) -> bool:
    """`_may_hold_code` over the whole of `text`. Most bodies are ASCII, and then ten
    substring tests and one translate answer it: each runs at memory speed, where re's search
    for a character class steps through the text a character at a time (measured: a 2 KB body
    without digits took 15 us; the CPU of the SMTP process that received it, 7 %)."""
    if not text.isascii():  # `\d` is any decimal digit of Unicode: re decides
        return _may_hold_code(text, 0, len(text))
    return (any(digit in text for digit in _ASCII_DIGITS)
            or b"\x01\x01\x01" in text.encode("ascii").translate(_CAPITAL_CONSONANTS))


def _without_links(text: str) -> str:
    """`text` with every http(s) URL replaced by as many spaces: a link's query string holds
    ids and codes (`?flow=3f9c2a1e-7b4d-...&code=902847`) that are no code printed for a
    reader, and its words ("code=") announce nothing. Offsets and line breaks stay as they are."""
    if "://" not in text:  # most bodies: one search in C
        return text
    return _URL.sub(lambda url: " " * len(url.group()), text)


def _code_words(text: str) -> list[tuple[int, int]]:
    """The spans of the code words of `text`, at most MAX_CODE_WORDS of them (a hostile body of
    nothing but code words costs no more than that): what `_CODE_WORD_ANY_CASE.finditer` finds,
    found by trying the whole pattern only where a stem of it stands."""
    lower = text.lower()
    if len(lower) != len(text):  # rare: lower-casing moved the offsets
        return [word.span() for word in islice(_CODE_WORD_ANY_CASE.finditer(text),
                                               MAX_CODE_WORDS)]
    spans: list[tuple[int, int]] = []
    taken = 0
    stems: Iterable[re.Match[str]] = _LATIN_STEM.finditer(lower)
    # Accented Latin text is not ASCII either, and holds none of the other scripts' stems.
    if not lower.isascii() and (others := list(_OTHER_SCRIPT_STEM.finditer(lower))):
        stems = sorted([*stems, *others], key=re.Match.start)
    for stem in stems:
        if stem.start() < taken:
            continue
        word = _CODE_WORD.match(lower, stem.start())
        if word is not None:
            spans.append(word.span())
            taken = word.end()
            if len(spans) == MAX_CODE_WORDS:
                break
    return spans


def _names_another_code(text: str, start: int, end: int) -> bool:
    word = text[start:end].lower()
    if (word in _OTHER_CODES or (word.endswith("コード") and word[:-3].endswith(_OTHER_JAPANESE))
            or (word.endswith("코드") and word[:-2].endswith(_OTHER_KOREAN))):
        return True
    before = text[max(0, start - 25):start].rstrip(" -\t").rsplit(None, 1)
    # Lower-casing the Turkish "İ" keeps its dot as a combining character ("i̇ndirim").
    last = before[-1].lower().replace("\u0307", "") if before else ""
    return (last in _OTHER_WORDS or last.startswith(_OTHER_PREFIXES)
            or _OTHER_AFTER.match(text, end, end + 25) is not None
            or (not text[end:end + 25].isascii()
                and _OTHER_AFTER_IN_SCRIPTS.match(text, end, end + 25) is not None))


def _nearest_code(text: str, start: int, end: int, following: int) -> str | None:
    """The first code after the word at text[start:end] on its line (within AFTER), or alone on
    the next non-empty line past any separator lines ("Your code is:\n\n-----\n482913", within
    ALONE_AFTER), up to the next code word; else the last one before it on its line."""
    line_end = text.find("\n", end)
    line_end = len(text) if line_end < 0 else line_end
    limit = min(line_end, end + AFTER)
    # The window ends at the next code word, which speaks for what follows it ("nothing to
    # verify here, promo code SAVE20": SAVE20 is the promo code's).
    # Every candidate holds a digit or capital consonants: a window without them is skipped
    # by a search in C.
    after_end = min(following, limit)
    if _may_hold_code(text, end, after_end):
        for match in _CANDIDATE.finditer(text, end, after_end):
            code = _code(text, match)
            if code is not None:
                return code
    # Bounded: a long run of spaces or a long token must not be read to its end (the window
    # holds a code of at most 12 characters and its dashes, which starts within ALONE_AFTER
    # once the separator lines are left out).
    stop = min(len(text), end + ALONE_AFTER + 30 + SEPARATOR_CHARS)
    alone = None if following < limit else _ALONE.match(text, line_end, stop)
    if alone is not None and (alone.start(2) - len(alone.group(1)) < end + ALONE_AFTER
                              and (alone.end() < stop or stop == len(text))):
        candidate = _CANDIDATE.fullmatch(text, alone.start(2), alone.end(2))
        if candidate is not None and (code := _code(text, candidate, alone=True)) is not None:
            return code
    before_start = max(text.rfind("\n", 0, start) + 1, start - BEFORE)
    if not _may_hold_code(text, before_start, start):
        return None
    before = [code for match in _CANDIDATE.finditer(text, before_start, start)
              if match.end() < start and (code := _code(text, match)) is not None]
    return before[-1] if before else None


def _code(text: str, match: re.Match[str], *, alone: bool = False) -> str | None:
    """The code `match` stands for in `text`, or None when it is not one; `alone` says the
    token is the only one on its line."""
    token = match.group()
    if token.isdigit():
        if not 4 <= len(token) <= 8 or (len(token) == 4 and _YEAR.fullmatch(token)):
            return None
        digits = token
    elif len(token) in (7, 11) and _DIGIT_GROUPS.fullmatch(token):
        digits = token.replace(token[3], "")
    elif prefixed := _PREFIXED.fullmatch(token):
        digits = prefixed.group(1)
    elif _LETTER_CODE.fullmatch(token):
        # One group of capitals in a sentence may be an acronym ("over HTTPS"); on its own
        # line, or in dash-joined groups, it is what sign-in products print.
        grouped = "-" in token
        return token if 5 <= len(token) - token.count("-") <= 12 and (grouped or alone) else None
    elif token[0].isdigit() and _QUANTITY.fullmatch(token):
        return None
    else:
        bare = token.replace("-", "")
        parts = token.split("-")
        if not (5 <= len(bare) <= 12 and any(c.isdigit() for c in bare)
                and any(c.isalpha() for c in bare)):
            return None
        # A lower-case word joined by a dash is prose: "6-digit", "2-factor", "covid-19".
        if len(parts) > 1 and any(part.isalpha() and part.islower() for part in parts):
            return None
        return token
    before = text[max(0, match.start() - 30):match.start()]
    after = text[match.end():match.end() + 12]
    if (_ends_with(_DIGIT_NEIGHBOUR_BEFORE, before, len("1-"))
            or _DIGIT_NEIGHBOUR_AFTER.match(after)
            or _ends_with(_PRICE_BEFORE, before, len("dollars "))
            or _PRICE_AFTER.match(after)
            or (_PHONE_WORD_START.search(before.lower()) and _PHONE_BEFORE.search(before))):
        return None
    # A postcode or house number: "75008 Paris", "1600 Amphitheatre Parkway", "CA 94043".
    if len(digits) <= 5 and (_ends_with(_STATE_BEFORE, before, len(" CA ")) or (
            _CAPITALISED_AFTER.match(after) and not before.rstrip().endswith(":"))):
        return None
    return digits


def _ends_with(pattern: re.Pattern[str], text: str, longest: int) -> bool:
    """Whether `pattern`, anchored with `$` and matching at most `longest` characters, matches
    at the end of `text`: searched from where such a match can start (one character further
    back, since `$` also matches before a final newline), not from every position of `text`."""
    return pattern.search(text, max(0, len(text) - longest - 1)) is not None
