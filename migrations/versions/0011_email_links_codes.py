"""emails: links and codes, found at ingest (models.mail.extract)

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-27 10:00:00.000000

Both are JSON lists; codes is JSONB on PostgreSQL, for the `@>` containment test of a `code:`
search. E-mails stored before this revision get empty lists: their bodies are not parsed again
(a data migration over every stored body would hold the table for minutes on a large instance,
and those e-mails expire with their inboxes anyway).
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql


revision = '0011'
down_revision = '0010'
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Plain ADD COLUMN, not a batch: a batch rebuilds the SQLite table and would drop the
    # full-text triggers of revision 0007 with it.
    op.add_column('emails', sa.Column('links', sa.JSON(), server_default='[]', nullable=False))
    op.add_column('emails', sa.Column('codes', sa.JSON().with_variant(postgresql.JSONB(),
                                                                      'postgresql'),
                                      server_default='[]', nullable=False))


def downgrade() -> None:
    # ALTER TABLE ... DROP COLUMN (SQLite 3.35+), for the same reason as in upgrade().
    op.execute('ALTER TABLE emails DROP COLUMN codes')
    op.execute('ALTER TABLE emails DROP COLUMN links')
