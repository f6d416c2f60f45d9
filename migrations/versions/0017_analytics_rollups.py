"""analytics rollups: daily sums of the hourly counters per org and team, with each day's 24 UTC
hours kept, and a per-org mark of the last day rolled up

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-24 15:00:00.000000

The tables start empty and no org has a mark, so every reader keeps reading the counters until
the rollup actor (or `burnbox analytics backfill`) has rolled an org's closed days up.
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = '0017'
down_revision = '0016'
branch_labels = None
depends_on = None

# Integer arrays on PostgreSQL (decoded faster than JSON), JSON on SQLite (no arrays).
HOURS = sa.JSON().with_variant(postgresql.ARRAY(sa.BigInteger()), 'postgresql')


def _org_fk(table: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(['org_id'], ['orgs.id'], name=op.f(f'fk_{table}_org_id_orgs'),
                                   ondelete='CASCADE')


def upgrade() -> None:
    op.create_table('analytics_days',
    sa.Column('org_id', sa.Uuid(), nullable=False),
    sa.Column('team_id', sa.Uuid(), nullable=False),
    sa.Column('day', sa.Date(), nullable=False),
    sa.Column('emails', sa.BigInteger(), nullable=False),
    sa.Column('bytes', sa.BigInteger(), nullable=False),
    sa.Column('inboxes', sa.BigInteger(), nullable=False),
    sa.Column('emails_by_hour', HOURS, nullable=False),
    sa.Column('bytes_by_hour', HOURS, nullable=False),
    sa.Column('inboxes_by_hour', HOURS, nullable=False),
    _org_fk('analytics_days'),
    sa.PrimaryKeyConstraint('org_id', 'team_id', 'day', name=op.f('pk_analytics_days'))
    )
    op.create_table('analytics_domain_days',
    sa.Column('org_id', sa.Uuid(), nullable=False),
    sa.Column('team_id', sa.Uuid(), nullable=False),
    sa.Column('day', sa.Date(), nullable=False),
    sa.Column('domain_id', sa.Uuid(), nullable=False),
    sa.Column('emails', sa.BigInteger(), nullable=False),
    sa.Column('emails_by_hour', HOURS, nullable=False),
    _org_fk('analytics_domain_days'),
    sa.PrimaryKeyConstraint('org_id', 'team_id', 'day', 'domain_id',
                            name=op.f('pk_analytics_domain_days'))
    )
    op.create_table('analytics_sender_days',
    sa.Column('org_id', sa.Uuid(), nullable=False),
    sa.Column('team_id', sa.Uuid(), nullable=False),
    sa.Column('day', sa.Date(), nullable=False),
    sa.Column('sender_domain', sa.String(length=253), nullable=False),
    sa.Column('emails', sa.BigInteger(), nullable=False),
    _org_fk('analytics_sender_days'),
    sa.PrimaryKeyConstraint('org_id', 'team_id', 'day', 'sender_domain',
                            name=op.f('pk_analytics_sender_days'))
    )
    op.create_table('analytics_rollup_marks',
    sa.Column('org_id', sa.Uuid(), nullable=False),
    sa.Column('rolled_through', sa.Date(), nullable=True),
    _org_fk('analytics_rollup_marks'),
    sa.PrimaryKeyConstraint('org_id', name=op.f('pk_analytics_rollup_marks'))
    )


def downgrade() -> None:
    for table in ('analytics_rollup_marks', 'analytics_sender_days', 'analytics_domain_days',
                  'analytics_days'):
        op.drop_table(table)
