"""chaos_rules: failure rules of an inbox (or templates of a domain assignment) that make
the SMTP server answer a chosen code, wait or close the connection on purpose

Revision ID: 0024
Revises: 0023
Create Date: 2026-11-28 07:00:00.000000

A rule goes with its inbox or its assignment; exactly one of the two owns it.
"""

import sqlalchemy as sa
from alembic import op

import models.db

revision = '0024'
down_revision = '0023'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('chaos_rules',
    sa.Column('inbox_id', sa.Uuid(), nullable=True),
    sa.Column('assignment_id', sa.Uuid(), nullable=True),
    sa.Column('position', sa.Integer(), nullable=False),
    sa.Column('stage', sa.String(length=8), nullable=False),
    sa.Column('action', sa.String(length=8), nullable=False),
    sa.Column('code', sa.Integer(), nullable=True),
    sa.Column('status', sa.String(length=16), nullable=True),
    sa.Column('text', sa.String(length=200), nullable=True),
    sa.Column('delay_ms', sa.Integer(), nullable=True),
    sa.Column('times', sa.Integer(), nullable=True),
    sa.Column('percent', sa.Integer(), nullable=True),
    sa.Column('fired', sa.Integer(), nullable=False),
    sa.Column('last_fired_at', models.db.UTCDateTime(timezone=True), nullable=True),
    sa.Column('created_at', models.db.UTCDateTime(timezone=True), nullable=False),
    sa.Column('id', sa.Uuid(), nullable=False),
    sa.CheckConstraint('(inbox_id IS NULL) <> (assignment_id IS NULL)',
                       name=op.f('ck_chaos_rules_one_owner')),
    sa.ForeignKeyConstraint(['assignment_id'], ['domain_assignments.id'],
                            name=op.f('fk_chaos_rules_assignment_id_domain_assignments'),
                            ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['inbox_id'], ['inboxes.id'],
                            name=op.f('fk_chaos_rules_inbox_id_inboxes'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_chaos_rules'))
    )
    for column in ('assignment_id', 'inbox_id'):
        op.create_index(op.f(f'ix_chaos_rules_{column}'), 'chaos_rules', [column],
                        unique=False)


def downgrade() -> None:
    op.drop_table('chaos_rules')
