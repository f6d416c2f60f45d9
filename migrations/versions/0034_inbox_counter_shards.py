"""inbox_counters.shard: each key's count spread over shards, as mail_counters' is

Revision ID: 0034
Revises: 0033
Create Date: 2026-12-03 07:10:00.000000

Creations on one domain no longer wait for one another on the domain's row (only a per-domain
cap or an alias takes that lock), so one counter row per team, domain and hour would be where
they queue: every thread now writes its own shard and analytics sum them. The rows counted
before this revision become shard 0.
"""

import sqlalchemy as sa
from alembic import op

revision = '0034'
down_revision = '0033'
branch_labels = None
depends_on = None

_KEY = ['org_id', 'team_id', 'domain_id', 'day', 'hour']


def upgrade() -> None:
    with op.batch_alter_table('inbox_counters', schema=None) as batch_op:
        batch_op.add_column(sa.Column('shard', sa.SmallInteger(), nullable=False,
                                      server_default='0'))
        batch_op.drop_constraint('pk_inbox_counters', type_='primary')
        batch_op.create_primary_key('pk_inbox_counters', [*_KEY, 'shard'])
    with op.batch_alter_table('inbox_counters', schema=None) as batch_op:
        batch_op.alter_column('shard', server_default=None)


def downgrade() -> None:
    counters = sa.table('inbox_counters', *(sa.column(name) for name in _KEY),
                        sa.column('shard', sa.SmallInteger()),
                        sa.column('inboxes', sa.BigInteger()))
    bind = op.get_bind()
    totals = bind.execute(sa.select(*(counters.c[name] for name in _KEY),
                                    sa.func.sum(counters.c.inboxes))
                          .group_by(*(counters.c[name] for name in _KEY))).all()
    bind.execute(counters.delete())
    with op.batch_alter_table('inbox_counters', schema=None) as batch_op:
        batch_op.drop_constraint('pk_inbox_counters', type_='primary')
        batch_op.drop_column('shard')
        batch_op.create_primary_key('pk_inbox_counters', _KEY)
    if totals:
        op.bulk_insert(sa.table('inbox_counters', *(sa.column(name) for name in _KEY),
                                sa.column('inboxes', sa.BigInteger())),
                       [{**dict(zip(_KEY, row[:-1], strict=True)), 'inboxes': row[-1]}
                        for row in totals])
