"""audit_log: channel, the face an audited change came through ("api" or "cli")

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-26 10:00:00.000000

Entries written before this revision read "api", the few that `burnbox create-admin` wrote
included.
"""

import sqlalchemy as sa
from alembic import op


revision = '0010'
down_revision = '0009'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('audit_log', schema=None) as batch_op:
        batch_op.add_column(sa.Column('channel', sa.String(length=8), server_default='api',
                                      nullable=False))


def downgrade() -> None:
    with op.batch_alter_table('audit_log', schema=None) as batch_op:
        batch_op.drop_column('channel')
