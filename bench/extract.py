"""Link and code extraction against the parse it runs in: the issue's target is extraction under
10% of a message's parse time.

Both sides go, in the same run, over every message of the test corpus
(tests/corpus/transactional.py: 55 transactional e-mails in seven languages), and over one
newsletter-sized HTML message. The candidate is `parse_message`, extraction included; the
baseline is extraction alone (`extract_links` + `extract_codes` over the texts the parse
produced), both timed in this thread's CPU time. The printed ratio, parse rate over extraction
rate, is therefore extraction time as a fraction of parse time.
"""

from __future__ import annotations

import time

from bench.harness import Comparison, compare
from models.mail.ingest.extract import extract_codes, extract_links
from models.mail.ingest.parse import parse_message
from models.mail.ingest.sanitise import html_to_text
from tests.corpus.transactional import SAMPLES, Sample


def _compare(name: str, raws: list[bytes]) -> Comparison:
    parsed = [parse_message(raw) for raw in raws]
    # What the parser hands extraction: the subject, the bodies, and without a text part the
    # HTML's rendered text.
    inputs = [(p.subject, p.body_text, p.body_html,
               "" if p.body_text.strip() else html_to_text(p.body_html))
              for p in parsed]

    def parse_all() -> None:
        for raw in raws:
            parse_message(raw)

    def extract_all() -> None:
        for subject, text, markup, html_text in inputs:
            extract_links(text, markup, html_text)
            extract_codes(subject, text if text.strip() else html_text)

    # CPU time of this thread: both sides are single-threaded pure Python, and the ratio must
    # not move with the load other processes put on the machine.
    return compare(name, parse_all, extract_all, clock=time.thread_time)


def run() -> list[Comparison]:
    """Parse vs extraction alone: over the corpus, and over a newsletter-sized message (the
    corpus's messages are a few hundred characters; a marketing e-mail is tens of KB of HTML)."""
    newsletter = Sample("bench-newsletter", "Your November digest", text=None, html="".join(
        f'<table><tr><td><h2>Story {n}</h2><p>Our team shipped release 3.{n} with '
        f'{100 + n} fixes; read the notes or watch the talk from 12/03/2026.</p>'
        f'<p><a href="https://news.example/story/{n}?utm_source=mail">Read more</a></p>'
        f'</td></tr></table>' for n in range(150)) + "<p>Your sign-in code: 482913</p>")
    return [
        _compare("extraction / parse time, corpus (target < 0.10)",
                 [sample.message() for sample in SAMPLES]),
        _compare("extraction / parse time, 40 KB newsletter", [newsletter.message()]),
    ]


if __name__ == "__main__":
    for comparison in run():
        print(comparison.line())
