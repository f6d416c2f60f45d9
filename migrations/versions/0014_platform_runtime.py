"""platform settings as one overrides document; system_configs for mailer/storage; roles.label

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-28 09:00:00.000000

`platform_settings.overrides` holds every key an administrator pinned, by its settings key
(`defaults.inbox_ttl`...), with `revision` counting the changes. The three columns that held a
few of them (registration_enabled, max_sessions_per_user, password_policy) are copied into the
document and dropped, so one place says what is overridden. `system_configs` holds the runtime
mailer and storage configuration (secrets encrypted, see burnbox/secretbox.py). `roles.label` is
the display name of a custom role (NULL: derived from the name).
"""

import json

import sqlalchemy as sa
from alembic import op

import models.db

revision = '0014'
down_revision = '0013'
branch_labels = None
depends_on = None

# The old password_policy JSON used the PasswordPolicy field names; its settings keys are
# `defaults.password_<field>`.
POLICY_FIELDS = ('min_length', 'max_length', 'require_uppercase', 'require_lowercase',
                 'require_digit', 'require_symbol')


def upgrade() -> None:
    op.add_column('platform_settings', sa.Column('overrides', sa.JSON(), server_default='{}',
                                                 nullable=False))
    op.add_column('platform_settings', sa.Column('revision', sa.Integer(), server_default='0',
                                                 nullable=False))
    connection = op.get_bind()
    rows = connection.execute(sa.text(
        'SELECT id, registration_enabled, max_sessions_per_user, password_policy '
        'FROM platform_settings')).all()
    for row_id, registration, sessions, policy in rows:
        if isinstance(policy, str):  # SQLite hands JSON back as text through a raw query
            policy = json.loads(policy)
        overrides = {f'defaults.password_{k}': v for k, v in (policy or {}).items()
                     if k in POLICY_FIELDS}
        if registration is not None:
            overrides['defaults.registration_enabled'] = bool(registration)
        if sessions is not None:
            overrides['defaults.max_sessions_per_user'] = sessions
        connection.execute(sa.text('UPDATE platform_settings SET overrides = :doc WHERE id = :id'),
                           {'doc': json.dumps(overrides), 'id': row_id})
    # Plain DROP COLUMN (SQLite 3.35+), like revision 0011: no batch rebuild needed.
    for column in ('registration_enabled', 'max_sessions_per_user', 'password_policy'):
        op.execute(f'ALTER TABLE platform_settings DROP COLUMN {column}')
    op.create_table('system_configs',
    sa.Column('key', sa.String(length=32), nullable=False),
    sa.Column('value', sa.JSON(), nullable=False),
    sa.Column('updated_at', models.db.UTCDateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('key', name=op.f('pk_system_configs'))
    )
    op.add_column('roles', sa.Column('label', sa.String(length=64), nullable=True))


def downgrade() -> None:
    op.execute('ALTER TABLE roles DROP COLUMN label')
    op.drop_table('system_configs')
    op.add_column('platform_settings', sa.Column('registration_enabled', sa.Boolean(),
                                                 nullable=True))
    op.add_column('platform_settings', sa.Column('max_sessions_per_user', sa.Integer(),
                                                 nullable=True))
    op.add_column('platform_settings', sa.Column('password_policy', sa.JSON(), nullable=True))
    op.execute('ALTER TABLE platform_settings DROP COLUMN revision')
    op.execute('ALTER TABLE platform_settings DROP COLUMN overrides')
