"""emails.spam_signals and emails.link_check: what made the spam score, the last link check

Revision ID: 0025
Revises: 0024
Create Date: 2026-11-28 07:00:00.000000

Both nullable: mail stored before has no signals kept (its detail says so with null), and an
e-mail has no link check until one is asked for.
"""

import sqlalchemy as sa
from alembic import op

revision = '0025'
down_revision = '0024'
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Plain ADD COLUMN, not a batch: a batch rebuilds the SQLite table and would drop the
    # full-text triggers of revision 0007 with it (as in 0011).
    op.add_column('emails', sa.Column('spam_signals', sa.JSON(), nullable=True))
    op.add_column('emails', sa.Column('link_check', sa.JSON(), nullable=True))


def downgrade() -> None:
    # ALTER TABLE ... DROP COLUMN (SQLite 3.35+), for the same reason as in upgrade().
    op.execute('ALTER TABLE emails DROP COLUMN link_check')
    op.execute('ALTER TABLE emails DROP COLUMN spam_signals')
