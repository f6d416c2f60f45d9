"""emails: the SMTP session's facts and the authentication results (SPF, DKIM, DMARC, ARC)

Revision ID: 0023
Revises: 0022
Create Date: 2026-11-28 07:00:00.000000

E-mails stored before this kept no session facts, so their results can never be computed: they
get the status `unavailable` instead of staying pending for ever.
"""

import sqlalchemy as sa
from alembic import op

revision = '0023'
down_revision = '0022'
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Plain ADD COLUMN, not a batch: a batch rebuilds the SQLite table and would drop the
    # full-text triggers of revision 0007 with it.
    op.add_column('emails', sa.Column('smtp_peer_ip', sa.String(45), server_default='',
                                      nullable=False))
    op.add_column('emails', sa.Column('smtp_helo', sa.String(255), server_default='',
                                      nullable=False))
    op.add_column('emails', sa.Column('envelope_from', sa.String(320), server_default='',
                                      nullable=False))
    op.add_column('emails', sa.Column('auth_results', sa.JSON(), nullable=True))
    op.add_column('emails', sa.Column('auth_spf', sa.String(16), nullable=True))
    op.add_column('emails', sa.Column('auth_dkim', sa.String(16), nullable=True))
    op.add_column('emails', sa.Column('auth_dmarc', sa.String(16), nullable=True))
    op.execute("""UPDATE emails SET auth_results = '{"status": "unavailable"}'""")


def downgrade() -> None:
    # ALTER TABLE ... DROP COLUMN (SQLite 3.35+), for the same reason as in upgrade().
    for column in ('auth_dmarc', 'auth_dkim', 'auth_spf', 'auth_results', 'envelope_from',
                   'smtp_helo', 'smtp_peer_ip'):
        op.execute(f'ALTER TABLE emails DROP COLUMN {column}')
