"""Entry module for the `dramatiq` worker command: load settings and set up the broker on import.

This is a process entry point (like a WSGI file), the one place where importing reads the
environment: `dramatiq tasks.boot` imports it in every worker process. `burnbox worker` runs the
command on the general queues (`worker.threads` threads); the `WaitingPools` added here run the
delivery queue (`worker.delivery_threads`) and the authentication queue
(`worker.authentication_threads`) beside it, each on threads of its own in the same process.
"""

from burnbox.gc_tuning import tune_collector
from burnbox.logs import configure_logging
from burnbox.settings import load_settings
from models.runtime import Runtime
from tasks import setup_broker
from tasks.wiring import WaitingPools, waiting_pools

settings = load_settings()
configure_logging(settings)
broker = setup_broker(Runtime.from_settings(settings))
broker.add_middleware(WaitingPools(waiting_pools(settings)))
# Set up: what exists now lives as long as the process (burnbox.gc_tuning).
tune_collector()
