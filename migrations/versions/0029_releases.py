"""releases: e-mails sent on to real mailboxes and how each delivery went; release_recipients:
the recipient patterns an org or a team allows; the permission team.emails.release, granted to
the built-in team lead role

Revision ID: 0029
Revises: 0028
Create Date: 2026-12-02 01:30:00.000000

A release goes with its e-mail (the audit trail keeps the record); its `released_by` becomes
NULL when the user goes. A recipients row belongs to an org (team_id NULL) or to one of its
teams, keyed by the owner's id. The permission is granted to no other role and so to no key
scope but those a person ticks.
"""

import uuid

import sqlalchemy as sa
from alembic import op

import models.db

revision = '0029'
down_revision = '0028'
branch_labels = None
depends_on = None

PERMISSION = "team.emails.release"
DESCRIPTION = "send emails on to real mailboxes within the allowed recipients"
# The built-in team lead role's fixed id (migration 0003's uuid5).
LEAD = uuid.uuid5(uuid.NAMESPACE_URL, "burnbox:role:team:lead")

_permissions = sa.table("permissions", sa.column("key", sa.String), sa.column("scope", sa.String),
                        sa.column("description", sa.String))
_grants = sa.table("role_permissions", sa.column("role_id", sa.Uuid),
                   sa.column("permission_key", sa.String))


def upgrade() -> None:
    op.create_table('releases',
    sa.Column('email_id', sa.Uuid(), nullable=False),
    sa.Column('released_by', sa.Uuid(), nullable=True),
    sa.Column('recipients', sa.JSON(), nullable=False),
    sa.Column('state', sa.String(length=8), nullable=False),
    sa.Column('attempts', sa.Integer(), nullable=False),
    sa.Column('relay_reply', sa.Text(), nullable=False),
    sa.Column('finished_at', models.db.UTCDateTime(timezone=True), nullable=True),
    sa.Column('id', sa.Uuid(), nullable=False),
    sa.Column('created_at', models.db.UTCDateTime(timezone=True), nullable=False),
    sa.Column('updated_at', models.db.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['email_id'], ['emails.id'], name=op.f('fk_releases_email_id_emails'),
                            ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['released_by'], ['users.id'],
                            name=op.f('fk_releases_released_by_users'), ondelete='SET NULL'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_releases'))
    )
    op.create_index(op.f('ix_releases_email_id'), 'releases', ['email_id'], unique=False)
    op.create_table('release_recipients',
    sa.Column('owner_id', sa.Uuid(), nullable=False),
    sa.Column('org_id', sa.Uuid(), nullable=False),
    sa.Column('team_id', sa.Uuid(), nullable=True),
    sa.Column('patterns', sa.JSON(), nullable=False),
    sa.Column('updated_at', models.db.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['org_id'], ['orgs.id'],
                            name=op.f('fk_release_recipients_org_id_orgs'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['team_id'], ['teams.id'],
                            name=op.f('fk_release_recipients_team_id_teams'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('owner_id', name=op.f('pk_release_recipients'))
    )
    op.create_index(op.f('ix_release_recipients_org_id'), 'release_recipients', ['org_id'],
                    unique=False)
    op.bulk_insert(_permissions, [{"key": PERMISSION, "scope": "team",
                                   "description": DESCRIPTION}])
    op.bulk_insert(_grants, [{"role_id": LEAD, "permission_key": PERMISSION}])


def downgrade() -> None:
    # Grants first: they refer to the permission row (custom roles may hold it too).
    op.execute(_grants.delete().where(_grants.c.permission_key == PERMISSION))
    op.execute(_permissions.delete().where(_permissions.c.key == PERMISSION))
    op.drop_index(op.f('ix_release_recipients_org_id'), table_name='release_recipients')
    op.drop_table('release_recipients')
    op.drop_index(op.f('ix_releases_email_id'), table_name='releases')
    op.drop_table('releases')
