"""domain_assignments.catch_all: mail to any address of the domain creates its inbox

Revision ID: 0022
Revises: 0021
Create Date: 2026-11-28 07:15:00.000000

Existing assignments are not catch-all: mail to an address without an inbox is still refused.
"""

import sqlalchemy as sa
from alembic import op

revision = '0022'
down_revision = '0021'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('domain_assignments') as batch:
        batch.add_column(sa.Column('catch_all', sa.Boolean(), nullable=False,
                                   server_default=sa.false()))


def downgrade() -> None:
    with op.batch_alter_table('domain_assignments') as batch:
        batch.drop_column('catch_all')
