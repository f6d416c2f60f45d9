"""audit_exports.lease_until: how long the worker running a job holds it

Revision ID: 0021
Revises: 0020
Create Date: 2026-11-24 21:30:00.000000

A job left `running` by a worker that died is claimed again once its lease has ended (by the
message redelivered, or by the cleanup's re-enqueue), instead of staying `running` until it
expires. Jobs running during the upgrade have none: they are claimed again at once, which a
live run survives (it marks the job done either way).
"""

import sqlalchemy as sa
from alembic import op

import models.db

revision = '0021'
down_revision = '0020'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('audit_exports') as batch:
        batch.add_column(sa.Column('lease_until', models.db.UTCDateTime(timezone=True),
                                   nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('audit_exports') as batch:
        batch.drop_column('lease_until')
