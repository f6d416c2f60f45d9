"""tenancy: roles and permissions (seeded), teams and team members, invites

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-21 02:03:35.592094

The seed is a frozen copy of the built-in roles and grants (design.md): later migrations change
it, never the models' constants. Built-in role ids are fixed (uuid5), so every deployment agrees.
"""

import uuid
from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import op

import models.db

ORG_PERMISSIONS = {
    "org.view": "view the org and its teams",
    "org.settings.view": "view org settings",
    "org.settings.manage": "rename the org and edit its settings",
    "org.delete": "delete the org",
    "org.members.view": "view and search org members",
    "org.members.invite": "invite people, list and revoke invites",
    "org.members.add": "add existing users as org members",
    "org.members.remove": "deactivate org members",
    "org.members.role": "change org members' roles",
    "org.domains.view": "view the org's domains",
    "org.domains.manage": "add, verify, edit and delete domains",
    "org.teams.create": "create teams",
    "org.teams.delete": "delete teams",
    "org.teams.manage": "archive and restore teams",
    "org.audit.view": "view the org audit log",
    "org.audit.export": "export the org audit log",
    "org.analytics.view": "view org analytics",
}
TEAM_PERMISSIONS = {
    "team.view": "view team info",
    "team.settings.manage": "edit team settings",
    "team.members.view": "view team members",
    "team.members.manage": "add and remove team members",
    "team.members.role": "change team member roles",
    "team.domains.view": "view domain assignments",
    "team.domains.manage": "update domain assignment settings",
    "team.webhooks.view": "view webhooks and delivery logs",
    "team.webhooks.manage": "create, edit, delete webhooks",
    "team.apikeys.view": "view API keys",
    "team.apikeys.manage": "create, revoke, rotate API keys",
    "team.inboxes.view": "view team inboxes",
    "team.inboxes.create": "create inboxes",
    "team.inboxes.manage": "manage inboxes",
    "team.emails.view": "view emails",
    "team.emails.manage": "mark, delete and manage emails",
    "team.analytics.view": "view team analytics",
}
ORG_VIEW = [key for key in ORG_PERMISSIONS if key.endswith(".view")]
TEAM_VIEW = [key for key in TEAM_PERMISSIONS if key.endswith(".view")]
# (scope, name, description, rank, grants_all_teams, permissions)
ROLES = [
    ("org", "owner", "full control of the org, its teams and members", 30, True,
     list(ORG_PERMISSIONS)),
    ("org", "admin", "manages the org, its teams and members; cannot delete the org", 20, True,
     [key for key in ORG_PERMISSIONS if key != "org.delete"]),
    ("org", "member", "sees the org; works in the teams they belong to", 10, False,
     list(dict.fromkeys([*ORG_VIEW, "org.analytics.view"]))),
    ("team", "lead", "manages the team, its members, inboxes, webhooks and keys", 20, False,
     list(TEAM_PERMISSIONS)),
    ("team", "member", "sees the team; creates and manages inboxes and emails", 10, False,
     list(dict.fromkeys([*TEAM_VIEW, "team.inboxes.create", "team.inboxes.manage",
                         "team.emails.view", "team.emails.manage"]))),
]


def role_id(scope, name):
    return uuid.uuid5(uuid.NAMESPACE_URL, f"burnbox:role:{scope}:{name}")


def seed() -> None:
    permissions = sa.table("permissions", sa.column("key", sa.String), sa.column("scope", sa.String),
                           sa.column("description", sa.String))
    roles = sa.table("roles", sa.column("id", sa.Uuid), sa.column("scope", sa.String),
                     sa.column("name", sa.String), sa.column("description", sa.String),
                     sa.column("rank", sa.Integer), sa.column("is_builtin", sa.Boolean),
                     sa.column("grants_all_teams", sa.Boolean),
                     sa.column("created_at", models.db.UTCDateTime()),
                     sa.column("updated_at", models.db.UTCDateTime()))
    grants = sa.table("role_permissions", sa.column("role_id", sa.Uuid),
                      sa.column("permission_key", sa.String))
    op.bulk_insert(permissions, [
        {"key": key, "scope": scope, "description": description}
        for scope, keys in (("org", ORG_PERMISSIONS), ("team", TEAM_PERMISSIONS))
        for key, description in keys.items()])
    now = datetime.now(UTC)
    op.bulk_insert(roles, [
        {"id": role_id(scope, name), "scope": scope, "name": name, "description": description,
         "rank": rank, "is_builtin": True, "grants_all_teams": all_teams, "created_at": now,
         "updated_at": now}
        for scope, name, description, rank, all_teams, _ in ROLES])
    op.bulk_insert(grants, [
        {"role_id": role_id(scope, name), "permission_key": key}
        for scope, name, _, _, _, keys in ROLES for key in keys])


revision = '0003'
down_revision = '0002'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('permissions',
    sa.Column('key', sa.String(length=64), nullable=False),
    sa.Column('scope', sa.String(length=8), nullable=False),
    sa.Column('description', sa.String(length=200), nullable=False),
    sa.PrimaryKeyConstraint('key', name=op.f('pk_permissions'))
    )
    op.create_table('roles',
    sa.Column('scope', sa.String(length=8), nullable=False),
    sa.Column('name', sa.String(length=32), nullable=False),
    sa.Column('description', sa.String(length=200), nullable=False),
    sa.Column('rank', sa.Integer(), nullable=False),
    sa.Column('is_builtin', sa.Boolean(), nullable=False),
    sa.Column('grants_all_teams', sa.Boolean(), nullable=False),
    sa.Column('id', sa.Uuid(), nullable=False),
    sa.Column('created_at', models.db.UTCDateTime(timezone=True), nullable=False),
    sa.Column('updated_at', models.db.UTCDateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_roles')),
    sa.UniqueConstraint('scope', 'name', name=op.f('uq_roles_scope_name'))
    )
    op.create_table('invites',
    sa.Column('org_id', sa.Uuid(), nullable=False),
    sa.Column('email', sa.String(length=254), nullable=False),
    sa.Column('role', sa.String(length=32), nullable=False),
    sa.Column('team_assignments', sa.JSON(), nullable=False),
    sa.Column('auth_method', sa.String(length=16), nullable=False),
    sa.Column('token_hash', sa.String(length=64), nullable=False),
    sa.Column('invited_by', sa.Uuid(), nullable=True),
    sa.Column('created_at', models.db.UTCDateTime(timezone=True), nullable=False),
    sa.Column('expires_at', models.db.UTCDateTime(timezone=True), nullable=False),
    sa.Column('id', sa.Uuid(), nullable=False),
    sa.ForeignKeyConstraint(['invited_by'], ['users.id'], name=op.f('fk_invites_invited_by_users'), ondelete='SET NULL'),
    sa.ForeignKeyConstraint(['org_id'], ['orgs.id'], name=op.f('fk_invites_org_id_orgs'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_invites')),
    sa.UniqueConstraint('org_id', 'email', name=op.f('uq_invites_org_id_email')),
    sa.UniqueConstraint('token_hash', name=op.f('uq_invites_token_hash'))
    )
    with op.batch_alter_table('invites', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_invites_expires_at'), ['expires_at'], unique=False)
        batch_op.create_index(batch_op.f('ix_invites_org_id'), ['org_id'], unique=False)

    op.create_table('role_permissions',
    sa.Column('role_id', sa.Uuid(), nullable=False),
    sa.Column('permission_key', sa.String(length=64), nullable=False),
    sa.ForeignKeyConstraint(['permission_key'], ['permissions.key'], name=op.f('fk_role_permissions_permission_key_permissions'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['role_id'], ['roles.id'], name=op.f('fk_role_permissions_role_id_roles'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('role_id', 'permission_key', name=op.f('pk_role_permissions'))
    )
    with op.batch_alter_table('role_permissions', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_role_permissions_permission_key'), ['permission_key'], unique=False)

    op.create_table('teams',
    sa.Column('org_id', sa.Uuid(), nullable=False),
    sa.Column('name', sa.String(length=200), nullable=False),
    sa.Column('slug', sa.String(length=64), nullable=False),
    sa.Column('description', sa.String(length=1000), nullable=False),
    sa.Column('is_archived', sa.Boolean(), nullable=False),
    sa.Column('archived_at', models.db.UTCDateTime(timezone=True), nullable=True),
    sa.Column('settings', sa.JSON(), nullable=False),
    sa.Column('id', sa.Uuid(), nullable=False),
    sa.Column('created_at', models.db.UTCDateTime(timezone=True), nullable=False),
    sa.Column('updated_at', models.db.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['org_id'], ['orgs.id'], name=op.f('fk_teams_org_id_orgs'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_teams')),
    sa.UniqueConstraint('org_id', 'slug', name=op.f('uq_teams_org_id_slug'))
    )
    with op.batch_alter_table('teams', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_teams_org_id'), ['org_id'], unique=False)

    op.create_table('team_members',
    sa.Column('team_id', sa.Uuid(), nullable=False),
    sa.Column('user_id', sa.Uuid(), nullable=False),
    sa.Column('role', sa.String(length=32), nullable=False),
    sa.Column('created_at', models.db.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['team_id'], ['teams.id'], name=op.f('fk_team_members_team_id_teams'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], name=op.f('fk_team_members_user_id_users'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('team_id', 'user_id', name=op.f('pk_team_members'))
    )
    with op.batch_alter_table('team_members', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_team_members_user_id'), ['user_id'], unique=False)

    seed()


def downgrade() -> None:
    with op.batch_alter_table('team_members', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_team_members_user_id'))

    op.drop_table('team_members')
    with op.batch_alter_table('teams', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_teams_org_id'))

    op.drop_table('teams')
    with op.batch_alter_table('role_permissions', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_role_permissions_permission_key'))

    op.drop_table('role_permissions')
    with op.batch_alter_table('invites', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_invites_org_id'))
        batch_op.drop_index(batch_op.f('ix_invites_expires_at'))

    op.drop_table('invites')
    op.drop_table('roles')
    op.drop_table('permissions')
