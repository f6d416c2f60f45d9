"""Session internals the API cannot show: spent refresh tokens are kept for reuse detection
only until they would have expired; a refresh within the reuse grace spends nothing."""

from datetime import timedelta

import pytest
from sqlalchemy import func, select, update

from burnbox.timeutil import utcnow
from models.errors import Unauthenticated
from models.identity.sessions import RefreshToken, open_session, refresh
from models.platform.audit import Origin


def _token_rows(runtime):
    with runtime.db.session() as session:
        return session.scalar(select(func.count()).select_from(RefreshToken))


def test_spent_tokens_are_forgotten_once_past_their_expiry(runtime, user):
    with runtime.db.transaction() as session:
        tokens = open_session(session, runtime.settings, session.merge(user), Origin()).tokens
    with runtime.db.transaction() as session:
        second = refresh(session, runtime.settings, refresh_token=tokens.refresh_token,
                         origin=Origin())
        third = refresh(session, runtime.settings, refresh_token=second.refresh_token,
                        origin=Origin())
    assert _token_rows(runtime) == 3  # two spent (kept to detect reuse), one live
    with runtime.db.transaction() as session:
        session.execute(update(RefreshToken).where(RefreshToken.rotated_at.is_not(None))
                        .values(expires_at=utcnow() - timedelta(seconds=1)))
    with runtime.db.transaction() as session:
        refresh(session, runtime.settings, refresh_token=third.refresh_token, origin=Origin())
    assert _token_rows(runtime) == 2  # the spent third token and the new one


def _spent_rows(runtime):
    with runtime.db.session() as session:
        return session.scalar(select(func.count()).select_from(RefreshToken)
                              .where(RefreshToken.rotated_at.is_not(None)))


def test_a_refresh_within_the_grace_spends_nothing_and_a_later_rotation_ends_it(runtime, user):
    """Two racing tabs: one rotated the token, the other presents it again within the grace.
    Once the first tab rotates its successor, the older token is reuse again."""
    with runtime.db.transaction() as session:
        first = open_session(session, runtime.settings, session.merge(user), Origin()).tokens
    with runtime.db.transaction() as session:
        tab_a = refresh(session, runtime.settings, refresh_token=first.refresh_token,
                        origin=Origin())
    with runtime.db.transaction() as session:
        refresh(session, runtime.settings, refresh_token=first.refresh_token, origin=Origin())
    assert (_token_rows(runtime), _spent_rows(runtime)) == (3, 1)
    with runtime.db.transaction() as session:
        refresh(session, runtime.settings, refresh_token=tab_a.refresh_token, origin=Origin())
    with pytest.raises(Unauthenticated, match="already used"), \
            runtime.db.transaction() as session:
        refresh(session, runtime.settings, refresh_token=first.refresh_token, origin=Origin())
