"""emails.spam_engine: what a spam engine (spamd, rspamd) said of an e-mail; attachments.md5,
sha1 and sha256: the checksums of each attachment's bytes

Revision ID: 0030
Revises: 0029
Create Date: 2026-12-02 01:00:00.000000

All nullable: mail received while no engine was configured has no engine result (nor does mail
stored before), and an attachment's checksums are computed by the worker after it is stored.
"""

import sqlalchemy as sa
from alembic import op

revision = '0030'
down_revision = '0029'
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Plain ADD COLUMN, not a batch: a batch rebuilds the SQLite table and would drop the
    # full-text triggers of revision 0007 with it (as in 0025).
    op.add_column('emails', sa.Column('spam_engine', sa.JSON(), nullable=True))
    op.add_column('attachments', sa.Column('md5', sa.String(length=32), nullable=True))
    op.add_column('attachments', sa.Column('sha1', sa.String(length=40), nullable=True))
    op.add_column('attachments', sa.Column('sha256', sa.String(length=64), nullable=True))


def downgrade() -> None:
    # ALTER TABLE ... DROP COLUMN (SQLite 3.35+), for the same reason as in upgrade().
    for column in ('sha256', 'sha1', 'md5'):
        op.execute(f'ALTER TABLE attachments DROP COLUMN {column}')
    op.execute('ALTER TABLE emails DROP COLUMN spam_engine')
