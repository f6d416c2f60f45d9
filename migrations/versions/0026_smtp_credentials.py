"""smtp_credentials: an inbox's SMTP capture credentials (a username and a secret's hash), and
emails.envelope_to: the envelope recipients of mail sent with them

Revision ID: 0026
Revises: 0025
Create Date: 2026-11-28 11:00:00.000000

One credential per inbox, gone with its inbox. envelope_to is nullable: mail delivered to an
inbox's own address (all mail stored before) has none.
"""

import sqlalchemy as sa
from alembic import op

import models.db

revision = '0026'
down_revision = '0025'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('smtp_credentials',
    sa.Column('inbox_id', sa.Uuid(), nullable=False),
    sa.Column('username', sa.String(length=320), nullable=False),
    sa.Column('secret_hash', sa.String(length=64), nullable=False),
    sa.Column('created_at', models.db.UTCDateTime(timezone=True), nullable=False),
    sa.Column('last_used_at', models.db.UTCDateTime(timezone=True), nullable=True),
    sa.Column('id', sa.Uuid(), nullable=False),
    sa.ForeignKeyConstraint(['inbox_id'], ['inboxes.id'],
                            name=op.f('fk_smtp_credentials_inbox_id_inboxes'),
                            ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_smtp_credentials')),
    sa.UniqueConstraint('inbox_id', name=op.f('uq_smtp_credentials_inbox_id')),
    sa.UniqueConstraint('username', name=op.f('uq_smtp_credentials_username'))
    )
    # Plain ADD COLUMN, not a batch: a batch rebuilds the SQLite table and would drop the
    # full-text triggers of revision 0007 with it (as in 0011 and 0025).
    op.add_column('emails', sa.Column('envelope_to', sa.JSON(), nullable=True))


def downgrade() -> None:
    # ALTER TABLE ... DROP COLUMN (SQLite 3.35+), for the same reason as in upgrade().
    op.execute('ALTER TABLE emails DROP COLUMN envelope_to')
    op.drop_table('smtp_credentials')
