"""attachments: content_id and inline, so clients can resolve cid: references in the HTML body

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-21 05:40:00.000000

Attachments stored before this revision get no Content-ID (NULL) and inline false: their raw
messages still hold the headers, but the rows are not re-parsed.
"""

import sqlalchemy as sa
from alembic import op


revision = '0008'
down_revision = '0007'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('attachments', schema=None) as batch_op:
        batch_op.add_column(sa.Column('content_id', sa.String(length=998), nullable=True))
        batch_op.add_column(sa.Column('inline', sa.Boolean(), server_default=sa.false(),
                                      nullable=False))


def downgrade() -> None:
    with op.batch_alter_table('attachments', schema=None) as batch_op:
        batch_op.drop_column('inline')
        batch_op.drop_column('content_id')
