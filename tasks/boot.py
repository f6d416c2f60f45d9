"""Entry module for the `dramatiq` worker command: load settings and set up the broker on import.

This is a process entry point (like a WSGI file), the one place where importing reads the
environment: `dramatiq tasks.boot` imports it in every worker process.
"""

from burnbox.logs import configure_logging
from burnbox.settings import load_settings
from models.runtime import Runtime
from tasks import setup_broker

settings = load_settings()
configure_logging(settings)
broker = setup_broker(Runtime.from_settings(settings))
