"""users: theme, the colour scheme the user chose for the web UI (light, dark or system)

Revision ID: 0031
Revises: 0030
Create Date: 2026-12-02 01:00:00.000000

Every existing user gets `system` (the UI follows the device's preference, as it did before
the choice existed).
"""

import sqlalchemy as sa
from alembic import op

revision = '0031'
down_revision = '0030'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column('users', sa.Column('theme', sa.String(length=8), nullable=False,
                                     server_default='system'))


def downgrade() -> None:
    # ALTER TABLE ... DROP COLUMN (SQLite 3.35+): a batch rebuild of users would have to
    # recreate every foreign key that points at it.
    op.execute('ALTER TABLE users DROP COLUMN theme')
