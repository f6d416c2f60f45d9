"""users: disabled_at, set while a system administrator has disabled the account

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-24 09:00:00.000000

NULL for every existing user (all stay enabled). Every foreign key to users was already
ON DELETE CASCADE (rows that belong to the user) or SET NULL (rows that only name them), so
deleting a user needs no change there; tests/models/admin/test_users.py checks it on the
migrated database of each backend.
"""

import sqlalchemy as sa
from alembic import op

import models.db


revision = '0012'
down_revision = '0011'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column('users', sa.Column('disabled_at', models.db.UTCDateTime(timezone=True),
                                     nullable=True))


def downgrade() -> None:
    # ALTER TABLE ... DROP COLUMN (SQLite 3.35+): a batch rebuild of users would have to
    # recreate every foreign key that points at it.
    op.execute('ALTER TABLE users DROP COLUMN disabled_at')
