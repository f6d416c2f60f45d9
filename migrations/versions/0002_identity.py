"""identity: users, sessions and refresh tokens, account tokens, platform settings, audit log, orgs and members

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-21 01:58:53.629217
"""

import sqlalchemy as sa
from alembic import op

import models.db


revision = '0002'
down_revision = '0001'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('audit_log',
    sa.Column('created_at', models.db.UTCDateTime(timezone=True), nullable=False),
    sa.Column('action', sa.String(length=64), nullable=False),
    sa.Column('actor_id', sa.Uuid(), nullable=True),
    sa.Column('org_id', sa.Uuid(), nullable=True),
    sa.Column('resource_type', sa.String(length=32), nullable=False),
    sa.Column('resource_id', sa.String(length=64), nullable=True),
    sa.Column('ip', sa.String(length=45), nullable=True),
    sa.Column('user_agent', sa.String(length=512), nullable=True),
    sa.Column('before', sa.JSON(), nullable=True),
    sa.Column('after', sa.JSON(), nullable=True),
    sa.Column('id', sa.Uuid(), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_audit_log'))
    )
    with op.batch_alter_table('audit_log', schema=None) as batch_op:
        batch_op.create_index('ix_audit_log_created_at', ['created_at'], unique=False)
        batch_op.create_index('ix_audit_log_org_id_created_at', ['org_id', 'created_at'], unique=False)

    op.create_table('orgs',
    sa.Column('name', sa.String(length=200), nullable=False),
    sa.Column('slug', sa.String(length=64), nullable=False),
    sa.Column('settings', sa.JSON(), nullable=False),
    sa.Column('id', sa.Uuid(), nullable=False),
    sa.Column('created_at', models.db.UTCDateTime(timezone=True), nullable=False),
    sa.Column('updated_at', models.db.UTCDateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_orgs')),
    sa.UniqueConstraint('slug', name=op.f('uq_orgs_slug'))
    )
    op.create_table('platform_settings',
    sa.Column('id', sa.Integer(), autoincrement=False, nullable=False),
    sa.Column('registration_enabled', sa.Boolean(), nullable=True),
    sa.Column('max_sessions_per_user', sa.Integer(), nullable=True),
    sa.Column('password_policy', sa.JSON(), nullable=True),
    sa.Column('setup_completed_at', models.db.UTCDateTime(timezone=True), nullable=True),
    sa.Column('updated_at', models.db.UTCDateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_platform_settings'))
    )
    op.create_table('users',
    sa.Column('email', sa.String(length=254), nullable=False),
    sa.Column('display_name', sa.String(length=200), nullable=False),
    sa.Column('password_hash', sa.String(length=255), nullable=True),
    sa.Column('is_system_admin', sa.Boolean(), nullable=False),
    sa.Column('email_verified', sa.Boolean(), nullable=False),
    sa.Column('timezone', sa.String(length=64), nullable=False),
    sa.Column('date_format', sa.String(length=16), nullable=False),
    sa.Column('time_format', sa.String(length=8), nullable=False),
    sa.Column('max_sessions', sa.Integer(), nullable=True),
    sa.Column('last_login_at', models.db.UTCDateTime(timezone=True), nullable=True),
    sa.Column('id', sa.Uuid(), nullable=False),
    sa.Column('created_at', models.db.UTCDateTime(timezone=True), nullable=False),
    sa.Column('updated_at', models.db.UTCDateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_users')),
    sa.UniqueConstraint('email', name=op.f('uq_users_email'))
    )
    op.create_table('account_tokens',
    sa.Column('user_id', sa.Uuid(), nullable=False),
    sa.Column('purpose', sa.String(length=32), nullable=False),
    sa.Column('token_hash', sa.String(length=64), nullable=False),
    sa.Column('created_at', models.db.UTCDateTime(timezone=True), nullable=False),
    sa.Column('expires_at', models.db.UTCDateTime(timezone=True), nullable=False),
    sa.Column('used_at', models.db.UTCDateTime(timezone=True), nullable=True),
    sa.Column('id', sa.Uuid(), nullable=False),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], name=op.f('fk_account_tokens_user_id_users'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_account_tokens')),
    sa.UniqueConstraint('token_hash', name=op.f('uq_account_tokens_token_hash'))
    )
    with op.batch_alter_table('account_tokens', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_account_tokens_user_id'), ['user_id'], unique=False)

    op.create_table('org_members',
    sa.Column('org_id', sa.Uuid(), nullable=False),
    sa.Column('user_id', sa.Uuid(), nullable=False),
    sa.Column('role', sa.String(length=32), nullable=False),
    sa.Column('created_at', models.db.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['org_id'], ['orgs.id'], name=op.f('fk_org_members_org_id_orgs'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], name=op.f('fk_org_members_user_id_users'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('org_id', 'user_id', name=op.f('pk_org_members'))
    )
    with op.batch_alter_table('org_members', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_org_members_user_id'), ['user_id'], unique=False)

    op.create_table('sessions',
    sa.Column('user_id', sa.Uuid(), nullable=False),
    sa.Column('ip_address', sa.String(length=45), nullable=False),
    sa.Column('user_agent', sa.String(length=512), nullable=False),
    sa.Column('created_at', models.db.UTCDateTime(timezone=True), nullable=False),
    sa.Column('last_used_at', models.db.UTCDateTime(timezone=True), nullable=False),
    sa.Column('expires_at', models.db.UTCDateTime(timezone=True), nullable=False),
    sa.Column('revoked_at', models.db.UTCDateTime(timezone=True), nullable=True),
    sa.Column('revoked_reason', sa.String(length=32), nullable=True),
    sa.Column('id', sa.Uuid(), nullable=False),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], name=op.f('fk_sessions_user_id_users'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_sessions'))
    )
    with op.batch_alter_table('sessions', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_sessions_user_id'), ['user_id'], unique=False)

    op.create_table('refresh_tokens',
    sa.Column('session_id', sa.Uuid(), nullable=False),
    sa.Column('token_hash', sa.String(length=64), nullable=False),
    sa.Column('created_at', models.db.UTCDateTime(timezone=True), nullable=False),
    sa.Column('expires_at', models.db.UTCDateTime(timezone=True), nullable=False),
    sa.Column('rotated_at', models.db.UTCDateTime(timezone=True), nullable=True),
    sa.Column('id', sa.Uuid(), nullable=False),
    sa.ForeignKeyConstraint(['session_id'], ['sessions.id'], name=op.f('fk_refresh_tokens_session_id_sessions'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_refresh_tokens')),
    sa.UniqueConstraint('token_hash', name=op.f('uq_refresh_tokens_token_hash'))
    )
    with op.batch_alter_table('refresh_tokens', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_refresh_tokens_session_id'), ['session_id'], unique=False)



def downgrade() -> None:
    with op.batch_alter_table('refresh_tokens', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_refresh_tokens_session_id'))

    op.drop_table('refresh_tokens')
    with op.batch_alter_table('sessions', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_sessions_user_id'))

    op.drop_table('sessions')
    with op.batch_alter_table('org_members', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_org_members_user_id'))

    op.drop_table('org_members')
    with op.batch_alter_table('account_tokens', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_account_tokens_user_id'))

    op.drop_table('account_tokens')
    op.drop_table('users')
    op.drop_table('platform_settings')
    op.drop_table('orgs')
    with op.batch_alter_table('audit_log', schema=None) as batch_op:
        batch_op.drop_index('ix_audit_log_org_id_created_at')
        batch_op.drop_index('ix_audit_log_created_at')

    op.drop_table('audit_log')
