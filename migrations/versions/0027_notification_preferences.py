"""notification_preferences: which events notify a user, one row per event the user chose

Revision ID: 0027
Revises: 0026
Create Date: 2026-12-01 22:00:00.000000

A user who never chose has no rows and follows the defaults of
models.delivery.notification_preferences; the rows go with their user.
"""

import sqlalchemy as sa
from alembic import op

import models.db

revision = '0027'
down_revision = '0026'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('notification_preferences',
    sa.Column('user_id', sa.Uuid(), nullable=False),
    sa.Column('event', sa.String(length=64), nullable=False),
    sa.Column('enabled', sa.Boolean(), nullable=False),
    sa.Column('updated_at', models.db.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'],
                            name=op.f('fk_notification_preferences_user_id_users'),
                            ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('user_id', 'event', name=op.f('pk_notification_preferences'))
    )


def downgrade() -> None:
    op.drop_table('notification_preferences')
