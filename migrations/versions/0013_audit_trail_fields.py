"""audit_log: actor e-mail and name, resource name, severity, category, and the list's indexes

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-28 10:00:00.000000

Entries written before this revision get their category and severity from their action (the
rules of `models.platform.audit`, copied here as they stood: a migration must not change
meaning when the code later does), and their actor's e-mail and display name from the user
row when it still exists. Their resource name stays empty.
"""

import sqlalchemy as sa
from alembic import op


revision = '0013'
down_revision = '0012'
branch_labels = None
depends_on = None

_FILTERS = ('action', 'actor_id', 'resource_type', 'severity', 'category')
_CATEGORIES = [  # (prefix, category), the longest prefixes first
    ('domain_assignment.', 'domain'), ('org.member_', 'member'), ('org.invite_', 'member'),
    ('team.member_', 'member'), ('platform.', 'admin'), ('session.', 'auth'),
    ('webhook.', 'webhook'), ('apikey.', 'apikey'), ('domain.', 'domain'), ('inbox.', 'inbox'),
    ('email.', 'email'), ('admin.', 'admin'), ('setup.', 'admin'), ('auth.', 'auth'),
    ('team.', 'team'), ('role.', 'admin'), ('org.', 'org'), ('sso.', 'admin'),
]
_CRITICAL = ('auth.password_change', 'auth.password_reset', 'auth.account_delete',
             'auth.session_revoke', 'org.member_role', 'org.delete')
_WARNING = ('org.member_deactivate', 'org.invite_create', 'team.delete', 'domain.delete',
            'webhook.delete', 'domain_assignment.delete', 'apikey.revoke', 'org.update',
            'org.settings_update')


def upgrade() -> None:
    with op.batch_alter_table('audit_log', schema=None) as batch_op:
        batch_op.add_column(sa.Column('actor_email', sa.String(length=254), nullable=True))
        batch_op.add_column(sa.Column('actor_display_name', sa.String(length=200),
                                      nullable=True))
        batch_op.add_column(sa.Column('resource_name', sa.String(length=255), nullable=True))
        batch_op.add_column(sa.Column('severity', sa.String(length=8), server_default='info',
                                      nullable=False))
        batch_op.add_column(sa.Column('category', sa.String(length=16), server_default='admin',
                                      nullable=False))
        for name in _FILTERS:
            batch_op.create_index(f'ix_audit_log_org_id_{name}_created_at',
                                  ['org_id', name, 'created_at'], unique=False)
    audit = sa.table('audit_log', sa.column('action', sa.String), sa.column('category', sa.String),
                     sa.column('severity', sa.String))
    done: list[str] = []
    for prefix, category in _CATEGORIES:
        matches = audit.c.action.like(prefix.replace('_', r'\_') + '%', escape='\\')
        for longer in done:
            matches = matches & ~audit.c.action.like(longer.replace('_', r'\_') + '%',
                                                     escape='\\')
        op.execute(audit.update().where(matches).values(category=category))
        done.append(prefix)
    op.execute(audit.update().where(audit.c.action.in_(_CRITICAL)).values(severity='critical'))
    op.execute(audit.update().where(audit.c.action.in_(_WARNING)).values(severity='warning'))
    op.execute('UPDATE audit_log SET actor_email = (SELECT email FROM users '
               'WHERE users.id = audit_log.actor_id), actor_display_name = (SELECT display_name '
               'FROM users WHERE users.id = audit_log.actor_id) WHERE actor_id IS NOT NULL')


def downgrade() -> None:
    with op.batch_alter_table('audit_log', schema=None) as batch_op:
        for name in _FILTERS:
            batch_op.drop_index(f'ix_audit_log_org_id_{name}_created_at')
        batch_op.drop_column('category')
        batch_op.drop_column('severity')
        batch_op.drop_column('resource_name')
        batch_op.drop_column('actor_display_name')
        batch_op.drop_column('actor_email')
