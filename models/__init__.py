"""Domain layer: SQLAlchemy entities (one module per aggregate), actions, domain errors and events.

Importing this package registers every entity on `Base.metadata`, which Alembic compares against
the migrations. models never imports Flask.
"""

from models.db import Base
from models.events import Event

__all__ = ["Base", "Event"]
