"""sso_providers and sso_domain_mappings: the OpenID Connect providers of single sign-on, and
where the users of an e-mail domain land

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-24 10:20:00.000000

The client secret is stored sealed (`fernet:<token>`, burnbox/secretbox.py), never in clear.
"""

import sqlalchemy as sa
from alembic import op

import models.db

revision = '0015'
down_revision = '0014'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('sso_providers',
    sa.Column('name', sa.String(length=32), nullable=False),
    sa.Column('provider_type', sa.String(length=16), nullable=False),
    sa.Column('client_id', sa.String(length=255), nullable=False),
    sa.Column('client_secret_sealed', sa.Text(), nullable=True),
    sa.Column('issuer_url', sa.String(length=2048), nullable=False),
    sa.Column('tenant_id', sa.String(length=100), nullable=False),
    sa.Column('redirect_url', sa.String(length=2048), nullable=False),
    sa.Column('auto_provision', sa.Boolean(), nullable=False),
    sa.Column('default_org_role', sa.String(length=32), nullable=False),
    sa.Column('allowed_domains', sa.JSON(), nullable=False),
    sa.Column('enabled', sa.Boolean(), nullable=False),
    sa.Column('id', sa.Uuid(), nullable=False),
    sa.Column('created_at', models.db.UTCDateTime(timezone=True), nullable=False),
    sa.Column('updated_at', models.db.UTCDateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_sso_providers')),
    sa.UniqueConstraint('name', name=op.f('uq_sso_providers_name'))
    )
    op.create_table('sso_domain_mappings',
    sa.Column('provider_id', sa.Uuid(), nullable=False),
    sa.Column('domain', sa.String(length=253), nullable=False),
    sa.Column('org_id', sa.Uuid(), nullable=False),
    sa.Column('org_role', sa.String(length=32), nullable=False),
    sa.Column('team_id', sa.Uuid(), nullable=True),
    sa.Column('team_role', sa.String(length=32), nullable=True),
    sa.Column('id', sa.Uuid(), nullable=False),
    sa.Column('created_at', models.db.UTCDateTime(timezone=True), nullable=False),
    sa.Column('updated_at', models.db.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['org_id'], ['orgs.id'],
                            name=op.f('fk_sso_domain_mappings_org_id_orgs'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['provider_id'], ['sso_providers.id'],
                            name=op.f('fk_sso_domain_mappings_provider_id_sso_providers'),
                            ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['team_id'], ['teams.id'],
                            name=op.f('fk_sso_domain_mappings_team_id_teams'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_sso_domain_mappings'))
    )
    for column in ('org_id', 'provider_id', 'team_id'):
        op.create_index(op.f(f'ix_sso_domain_mappings_{column}'), 'sso_domain_mappings',
                        [column], unique=False)


def downgrade() -> None:
    op.drop_table('sso_domain_mappings')
    op.drop_table('sso_providers')
