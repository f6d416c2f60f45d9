"""Entry module for the `dramatiq` worker command: load settings and set up the broker on import.

This is a process entry point (like a WSGI file), the one place where importing reads the
environment: `dramatiq tasks.boot` imports it in every worker process. `burnbox worker` runs the
command on every queue but the delivery queue (`worker.threads` threads); the `DeliveryPool`
added here runs that queue beside it, on `worker.delivery_threads` threads of the same process.
"""

from burnbox.gc_tuning import tune_collector
from burnbox.logs import configure_logging
from burnbox.settings import load_settings
from models.runtime import Runtime
from tasks import setup_broker
from tasks.wiring import DeliveryPool

settings = load_settings()
configure_logging(settings)
broker = setup_broker(Runtime.from_settings(settings))
broker.add_middleware(DeliveryPool(settings.worker.delivery_threads))
# Set up: what exists now lives as long as the process (burnbox.gc_tuning).
tune_collector()
