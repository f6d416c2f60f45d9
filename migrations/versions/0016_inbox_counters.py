"""inbox_counters: inboxes created per org, team, domain, day and hour (UTC), for analytics

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-24 10:15:00.000000

Append-only, like mail_counters: analytics read it so inbox cleanup never lowers history. The
inboxes still stored when this revision runs are counted into it (by their created_at); those
the cleanup removed earlier are gone and cannot be counted.
"""

from collections import Counter

import sqlalchemy as sa
from alembic import op

import models.db

revision = '0016'
down_revision = '0015'
branch_labels = None
depends_on = None


def upgrade() -> None:
    table = op.create_table('inbox_counters',
    sa.Column('org_id', sa.Uuid(), nullable=False),
    sa.Column('team_id', sa.Uuid(), nullable=False),
    sa.Column('domain_id', sa.Uuid(), nullable=False),
    sa.Column('day', sa.Date(), nullable=False),
    sa.Column('hour', sa.SmallInteger(), nullable=False),
    sa.Column('inboxes', sa.BigInteger(), nullable=False),
    sa.ForeignKeyConstraint(['org_id'], ['orgs.id'], name=op.f('fk_inbox_counters_org_id_orgs'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('org_id', 'team_id', 'domain_id', 'day', 'hour', name=op.f('pk_inbox_counters'))
    )
    with op.batch_alter_table('inbox_counters', schema=None) as batch_op:
        batch_op.create_index('ix_inbox_counters_org_id_day', ['org_id', 'day'], unique=False)
        batch_op.create_index('ix_inbox_counters_team_id_day', ['team_id', 'day'], unique=False)
    inboxes = sa.table('inboxes', sa.column('org_id', sa.Uuid()), sa.column('team_id', sa.Uuid()),
                       sa.column('domain_id', sa.Uuid()),
                       sa.column('created_at', models.db.UTCDateTime(timezone=True)))
    counts: Counter[tuple] = Counter()
    for org_id, team_id, domain_id, created_at in op.get_bind().execute(sa.select(inboxes)):
        counts[(org_id, team_id, domain_id, created_at.date(), created_at.hour)] += 1
    if counts:
        op.bulk_insert(table, [{'org_id': org, 'team_id': team, 'domain_id': domain, 'day': day,
                                'hour': hour, 'inboxes': n}
                               for (org, team, domain, day, hour), n in counts.items()])


def downgrade() -> None:
    with op.batch_alter_table('inbox_counters', schema=None) as batch_op:
        batch_op.drop_index('ix_inbox_counters_team_id_day')
        batch_op.drop_index('ix_inbox_counters_org_id_day')
    op.drop_table('inbox_counters')
