"""user_sso_identities: a user's account at an SSO provider (the ID token's subject);
sso_sessions: the sessions opened through a provider (unlinking it ends them)

Revision ID: 0020
Revises: 0019
Create Date: 2026-11-24 15:00:00.000000

One identity per (provider, subject) and per (user, provider); it goes with its user and with
its provider.
"""

import sqlalchemy as sa
from alembic import op

import models.db

revision = '0020'
down_revision = '0019'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('user_sso_identities',
    sa.Column('user_id', sa.Uuid(), nullable=False),
    sa.Column('provider_id', sa.Uuid(), nullable=False),
    sa.Column('subject', sa.String(length=255), nullable=False),
    sa.Column('email', sa.String(length=254), nullable=False),
    sa.Column('display_name', sa.String(length=200), nullable=False),
    sa.Column('linked_at', models.db.UTCDateTime(timezone=True), nullable=False),
    sa.Column('last_used_at', models.db.UTCDateTime(timezone=True), nullable=True),
    sa.Column('id', sa.Uuid(), nullable=False),
    sa.ForeignKeyConstraint(['provider_id'], ['sso_providers.id'],
                            name=op.f('fk_user_sso_identities_provider_id_sso_providers'),
                            ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'],
                            name=op.f('fk_user_sso_identities_user_id_users'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_user_sso_identities')),
    sa.UniqueConstraint('provider_id', 'subject',
                        name=op.f('uq_user_sso_identities_provider_id_subject')),
    sa.UniqueConstraint('user_id', 'provider_id',
                        name=op.f('uq_user_sso_identities_user_id_provider_id'))
    )
    for column in ('provider_id', 'user_id'):
        op.create_index(op.f(f'ix_user_sso_identities_{column}'), 'user_sso_identities',
                        [column], unique=False)
    op.create_table('sso_sessions',
    sa.Column('session_id', sa.Uuid(), nullable=False),
    sa.Column('provider_id', sa.Uuid(), nullable=False),
    sa.ForeignKeyConstraint(['provider_id'], ['sso_providers.id'],
                            name=op.f('fk_sso_sessions_provider_id_sso_providers'),
                            ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['session_id'], ['sessions.id'],
                            name=op.f('fk_sso_sessions_session_id_sessions'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('session_id', name=op.f('pk_sso_sessions'))
    )
    op.create_index(op.f('ix_sso_sessions_provider_id'), 'sso_sessions', ['provider_id'],
                    unique=False)


def downgrade() -> None:
    op.drop_table('sso_sessions')
    op.drop_table('user_sso_identities')
