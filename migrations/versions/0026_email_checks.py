"""emails.spam_signals and emails.link_check: what made the spam score, the last link check

Revision ID: 0026
Revises: 0021
Create Date: 2026-11-28 07:00:00.000000

Both nullable: mail stored before has no signals kept (its detail says so with null), and an
e-mail has no link check until one is asked for.
"""

import sqlalchemy as sa
from alembic import op

revision = '0026'
down_revision = '0021'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('emails') as batch:
        batch.add_column(sa.Column('spam_signals', sa.JSON(), nullable=True))
        batch.add_column(sa.Column('link_check', sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('emails') as batch:
        batch.drop_column('link_check')
        batch.drop_column('spam_signals')
