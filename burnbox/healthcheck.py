"""`python -m burnbox.healthcheck`: exit 0 when this machine's web server answers /healthz with
200, 1 otherwise (with one line saying why). The image's HEALTHCHECK runs it: the slim image has
no curl, and it finds the port the same way the server does (config file, environment, PORT).
"""

from __future__ import annotations

import sys
import urllib.error
import urllib.request

from burnbox.settings import SettingsError, load_settings

TIMEOUT = 4.0  # seconds; below the HEALTHCHECK's own --timeout


def check(url: str) -> str | None:
    """None when `url` answers 200, else what went wrong."""
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT) as response:  # noqa: S310 (http URL built from our settings)
            return None if response.status == 200 else f"{url} answered {response.status}"
    except urllib.error.HTTPError as exc:
        return f"{url} answered {exc.code}"
    except (urllib.error.URLError, OSError) as exc:
        return f"{url}: {getattr(exc, 'reason', exc)}"


def main() -> int:
    """Check /healthz at the address the settings give; the exit status for the shell."""
    try:
        settings = load_settings()
    except SettingsError as exc:
        print(f"unhealthy: configuration error: {exc}", file=sys.stderr)
        return 1
    problem = check(f"{settings.http.local_url}/healthz")
    if problem:
        print(f"unhealthy: {problem}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
