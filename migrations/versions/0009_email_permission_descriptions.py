"""permissions: the descriptions of team.emails.view and team.emails.manage follow the rule that
marking e-mails read needs only team.emails.view (reading is viewing) and deleting them
team.emails.manage

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-24 03:50:00.000000
"""

import sqlalchemy as sa
from alembic import op


revision = '0009'
down_revision = '0008'
branch_labels = None
depends_on = None

_permissions = sa.table("permissions", sa.column("key", sa.String),
                        sa.column("description", sa.String))
NEW = {"team.emails.view": "view emails and mark them read",
       "team.emails.manage": "delete emails"}
OLD = {"team.emails.view": "view emails",
       "team.emails.manage": "mark, delete and manage emails"}


def _describe(descriptions: dict[str, str]) -> None:
    for key, description in descriptions.items():
        op.execute(_permissions.update().where(_permissions.c.key == key)
                   .values(description=description))


def upgrade() -> None:
    _describe(NEW)


def downgrade() -> None:
    _describe(OLD)
