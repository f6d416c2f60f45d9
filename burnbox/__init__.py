"""Burnbox: settings, the CLI and the adapters every process shares.

No business rules and no Flask live here.
"""

__version__ = "0.1.0"
