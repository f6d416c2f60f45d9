"""release_rules: auto-release rules of inboxes and domain assignments; releases.rule_id: the
rule that made a release, one release per e-mail and rule

Revision ID: 0033
Revises: 0032
Create Date: 2026-12-02 07:30:00.000000

A rule belongs to exactly one inbox or one assignment of a team and goes with it (it names no
org: a team moved to another org takes its rules along); a release keeps its
e-mail's record when its rule is deleted (rule_id becomes NULL). The unique (email_id, rule_id)
is what lets a rule release an e-mail at most once; releases a person asked for have no rule,
and NULLs never collide.
"""

import sqlalchemy as sa
from alembic import op

import models.db

revision = '0033'
down_revision = '0032'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('release_rules',
    sa.Column('team_id', sa.Uuid(), nullable=False),
    sa.Column('inbox_id', sa.Uuid(), nullable=True),
    sa.Column('assignment_id', sa.Uuid(), nullable=True),
    sa.Column('query', sa.Text(), nullable=False),
    sa.Column('recipients', sa.JSON(), nullable=False),
    sa.Column('created_by', sa.Uuid(), nullable=True),
    sa.Column('id', sa.Uuid(), nullable=False),
    sa.Column('created_at', models.db.UTCDateTime(timezone=True), nullable=False),
    sa.Column('updated_at', models.db.UTCDateTime(timezone=True), nullable=False),
    sa.CheckConstraint('(inbox_id IS NULL) <> (assignment_id IS NULL)',
                       name=op.f('ck_release_rules_one_owner')),
    sa.ForeignKeyConstraint(['assignment_id'], ['domain_assignments.id'],
                            name=op.f('fk_release_rules_assignment_id_domain_assignments'),
                            ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['created_by'], ['users.id'],
                            name=op.f('fk_release_rules_created_by_users'), ondelete='SET NULL'),
    sa.ForeignKeyConstraint(['inbox_id'], ['inboxes.id'],
                            name=op.f('fk_release_rules_inbox_id_inboxes'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['team_id'], ['teams.id'],
                            name=op.f('fk_release_rules_team_id_teams'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_release_rules'))
    )
    op.create_index(op.f('ix_release_rules_assignment_id'), 'release_rules', ['assignment_id'],
                    unique=False)
    op.create_index(op.f('ix_release_rules_inbox_id'), 'release_rules', ['inbox_id'],
                    unique=False)
    with op.batch_alter_table('releases') as batch:
        batch.add_column(sa.Column('rule_id', sa.Uuid(), nullable=True))
        batch.create_foreign_key(batch.f('fk_releases_rule_id_release_rules'), 'release_rules',
                                 ['rule_id'], ['id'], ondelete='SET NULL')
        batch.create_unique_constraint(batch.f('uq_releases_email_id_rule_id'),
                                       ['email_id', 'rule_id'])


def downgrade() -> None:
    with op.batch_alter_table('releases') as batch:
        batch.drop_constraint(batch.f('uq_releases_email_id_rule_id'), type_='unique')
        batch.drop_constraint(batch.f('fk_releases_rule_id_release_rules'),
                              type_='foreignkey')
        batch.drop_column('rule_id')
    op.drop_index(op.f('ix_release_rules_inbox_id'), table_name='release_rules')
    op.drop_index(op.f('ix_release_rules_assignment_id'), table_name='release_rules')
    op.drop_table('release_rules')
