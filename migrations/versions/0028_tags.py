"""tags: a team's tags, the links of e-mails to them, the team's tag rules, and each e-mail's
tag names

Revision ID: 0028
Revises: 0027
Create Date: 2026-12-02 01:00:00.000000

`emails.tags` is a copy of the e-mail's links' names (models.mail.tag_entities); existing
e-mails have none.
"""

import sqlalchemy as sa
from alembic import op

import models.db

revision = '0028'
down_revision = '0027'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('tags',
    sa.Column('team_id', sa.Uuid(), nullable=False),
    sa.Column('name', sa.String(length=64), nullable=False),
    sa.Column('key', sa.String(length=192), nullable=False),
    sa.Column('created_at', models.db.UTCDateTime(timezone=True), nullable=False),
    sa.Column('id', sa.Uuid(), nullable=False),
    sa.ForeignKeyConstraint(['team_id'], ['teams.id'], name=op.f('fk_tags_team_id_teams'),
                            ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_tags')),
    sa.UniqueConstraint('team_id', 'key', name=op.f('uq_tags_team_id_key'))
    )
    op.create_table('email_tags',
    sa.Column('email_id', sa.Uuid(), nullable=False),
    sa.Column('tag_id', sa.Uuid(), nullable=False),
    sa.ForeignKeyConstraint(['email_id'], ['emails.id'],
                            name=op.f('fk_email_tags_email_id_emails'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['tag_id'], ['tags.id'], name=op.f('fk_email_tags_tag_id_tags'),
                            ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('email_id', 'tag_id', name=op.f('pk_email_tags'))
    )
    with op.batch_alter_table('email_tags', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_email_tags_tag_id'), ['tag_id'], unique=False)
    op.create_table('tag_rules',
    sa.Column('team_id', sa.Uuid(), nullable=False),
    sa.Column('query', sa.Text(), nullable=False),
    sa.Column('tags', sa.JSON(), nullable=False),
    sa.Column('created_at', models.db.UTCDateTime(timezone=True), nullable=False),
    sa.Column('id', sa.Uuid(), nullable=False),
    sa.ForeignKeyConstraint(['team_id'], ['teams.id'], name=op.f('fk_tag_rules_team_id_teams'),
                            ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_tag_rules'))
    )
    with op.batch_alter_table('tag_rules', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_tag_rules_team_id'), ['team_id'], unique=False)
    # A plain ADD COLUMN on both: a batch operation would rebuild `emails` on SQLite, and its
    # full-text triggers with it.
    op.add_column('emails', sa.Column('tags', sa.JSON(), server_default='[]', nullable=False))


def downgrade() -> None:
    op.execute('ALTER TABLE emails DROP COLUMN tags')
    with op.batch_alter_table('tag_rules', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_tag_rules_team_id'))
    op.drop_table('tag_rules')
    with op.batch_alter_table('email_tags', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_email_tags_tag_id'))
    op.drop_table('email_tags')
    op.drop_table('tags')
