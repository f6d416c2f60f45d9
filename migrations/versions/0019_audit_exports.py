"""audit_exports: export jobs of an org's audit trail, written to object storage by a worker

Revision ID: 0019
Revises: 0018
Create Date: 2026-11-24 16:00:00.000000
"""

import sqlalchemy as sa
from alembic import op

import models.db

revision = '0019'
down_revision = '0018'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('audit_exports',
    sa.Column('org_id', sa.Uuid(), nullable=False),
    sa.Column('user_id', sa.Uuid(), nullable=False),
    sa.Column('format', sa.String(length=8), nullable=False),
    sa.Column('filters', sa.JSON(), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('storage_key', sa.String(length=255), nullable=True),
    sa.Column('entries', sa.BigInteger(), nullable=True),
    sa.Column('size_bytes', sa.BigInteger(), nullable=True),
    sa.Column('error', sa.String(length=300), nullable=True),
    sa.Column('created_at', models.db.UTCDateTime(timezone=True), nullable=False),
    sa.Column('finished_at', models.db.UTCDateTime(timezone=True), nullable=True),
    sa.Column('expires_at', models.db.UTCDateTime(timezone=True), nullable=False),
    sa.Column('id', sa.Uuid(), nullable=False),
    sa.ForeignKeyConstraint(['org_id'], ['orgs.id'], name=op.f('fk_audit_exports_org_id_orgs'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], name=op.f('fk_audit_exports_user_id_users'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_audit_exports'))
    )
    with op.batch_alter_table('audit_exports', schema=None) as batch_op:
        batch_op.create_index('ix_audit_exports_org_id_created_at', ['org_id', 'created_at'],
                              unique=False)
        batch_op.create_index('ix_audit_exports_expires_at', ['expires_at'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('audit_exports', schema=None) as batch_op:
        batch_op.drop_index('ix_audit_exports_expires_at')
        batch_op.drop_index('ix_audit_exports_org_id_created_at')
    op.drop_table('audit_exports')
