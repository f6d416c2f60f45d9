"""attachments.thumbnail_key: where an image attachment's thumbnail is stored

Revision ID: 0032
Revises: 0031
Create Date: 2026-12-02 01:20:00.000000

Null until the worker has made the thumbnail (and for every attachment that is not an image
it can read); the object goes with its attachment as the attachment's own object does.
Indexed like the other object keys: deleting mail asks which keys no row references any more.
"""

import sqlalchemy as sa
from alembic import op

revision = '0032'
down_revision = '0031'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('attachments') as batch:
        batch.add_column(sa.Column('thumbnail_key', sa.String(length=255), nullable=True))
        batch.create_index('ix_attachments_thumbnail_key', ['thumbnail_key'])


def downgrade() -> None:
    with op.batch_alter_table('attachments') as batch:
        batch.drop_index('ix_attachments_thumbnail_key')
        batch.drop_column('thumbnail_key')
