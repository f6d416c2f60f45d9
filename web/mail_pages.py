"""The pages that show an e-mail's bodies on their own (the native `/view/:id.html|.txt` of
`web.views.viewing`, and the Mailpit face's `/view/<ID>.html|.txt`): one document and one set of
walls for both, so no face serves mail with weaker ones."""

from __future__ import annotations

from flask import Response

# The reading pane frame's policies (BLOCKED and IMAGES in web/ui/static/js/email.js; a test
# holds the two copies equal): nothing leaves the page but data: images and fonts, and, when
# asked for, http(s) images.
FRAME_POLICY = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; font-src data:"
FRAME_POLICY_IMAGES = ("default-src 'none'; style-src 'unsafe-inline'; "
                       "img-src data: http: https:; font-src data:")
# Added to the header only: what the frame's `sandbox=""` attribute and its embedding page
# (frame-ancestors 'none') give the frame, for a page opened on its own.
PAGE_WALLS = "; sandbox; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"



def frame_document(html: str, policy: str) -> str:
    """The document of sanitised `html` under `policy`, as the reading pane's frame holds it:
    the policy first, before any markup of the e-mail could load something, and links opening
    a new window, which the sandbox forbids, so a click navigates nowhere. Added for a page of
    its own (a frame ignores both): the encoding, and a viewport as wide as the device, so a
    phone's emulation lays the mail out at the phone's width, as mail apps do."""
    meta = f'<meta http-equiv="Content-Security-Policy" content="{policy}">'
    return (f'<!doctype html><html><head>{meta}<meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f'<base target="_blank"></head><body>{html}</body></html>')


def mail_page(body: str, mimetype: str, policy: str) -> Response:
    """`body` as a UTF-8 page of `mimetype` behind the frame's walls."""
    response = Response(body, mimetype=mimetype)  # Flask adds charset=utf-8 to text types
    response.headers["Content-Security-Policy"] = policy + PAGE_WALLS
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["X-Frame-Options"] = "DENY"
    response.headers["Referrer-Policy"] = "no-referrer"
    # Mail can be deleted, and the page is one person's: no shared or stale copy.
    response.headers["Cache-Control"] = "no-store"
    return response
