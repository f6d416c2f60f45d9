"""audit list indexes (PostgreSQL): the actor e-mail filter (case-insensitive) and a trigram
index for the resource-name substring filter

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-24 15:30:00.000000

Both are expression indexes that only this migration declares (models.schema.include_name
leaves them out of the drift check, like the e-mail search index). pg_trgm is a trusted
extension (PostgreSQL 13+): the database owner may create it. SQLite, the embedded single-machine
mode, gets neither: its trails are small, and its reflection warns on expression indexes.
"""

from alembic import op

revision = '0018'
down_revision = '0017'
branch_labels = None
depends_on = None


def upgrade() -> None:
    if op.get_bind().dialect.name == 'postgresql':
        # INCLUDE the column itself: PostgreSQL reads an expression index alone (an
        # index-only scan, for the capped count) only when the column is in it too.
        op.execute("CREATE INDEX ix_audit_log_org_id_actor_email_created_at "
                   "ON audit_log (org_id, lower(actor_email), created_at) INCLUDE (actor_email)")
        op.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
        op.execute("CREATE INDEX ix_audit_log_resource_name_trgm "
                   "ON audit_log USING gin (lower(resource_name) gin_trgm_ops)")


def downgrade() -> None:
    if op.get_bind().dialect.name == 'postgresql':
        op.execute("DROP INDEX ix_audit_log_resource_name_trgm")
        op.execute("DROP INDEX ix_audit_log_org_id_actor_email_created_at")
