"""`burnbox set-password`: the operator sets an account's password from a shell (the password
`bootstrap` made up is shown once; this is the way back in)."""

import re

from sqlalchemy import select

from models.identity.sessions import active_sessions
from models.identity.users import User
from models.platform.audit import CLI, PASSWORD_RESET, AuditEntry
from tests.factories.identity import make_password_user, make_tokens
from tests.identity import EMAIL, PASSWORD, app_with, bearer, login


def _account(runtime):
    with runtime.db.transaction() as session:
        user = make_password_user(session, runtime.settings)
        tokens = make_tokens(session, runtime.settings, user)
        return user.id, tokens


def test_a_made_up_password_is_printed_once_and_signs_in_and_old_sessions_end(
        committed_runtime, burnbox):
    user_id, tokens = _account(committed_runtime)
    result = burnbox("set-password", EMAIL.upper())
    assert result.exit_code == 0, result.output
    [new_password] = re.findall(r"set: (\S+) \(shown once\)", result.stdout)
    assert "every session of theirs is signed out" in result.stdout
    client = app_with(committed_runtime).test_client()
    assert login(client, EMAIL, PASSWORD).status_code == 401
    assert login(client, EMAIL, new_password).status_code == 200
    assert client.get("/api/v1/auth/me", headers=bearer(tokens.access_token)).status_code == 401
    with committed_runtime.db.session() as session:
        [entry] = session.scalars(select(AuditEntry).where(AuditEntry.action == PASSWORD_RESET))
        assert (entry.resource_id, entry.channel, entry.actor_id) == (str(user_id), CLI, None)
        assert entry.user_agent == "burnbox set-password"
        assert len(active_sessions(session, user_id)) == 1  # the sign-in just made


def test_a_chosen_password_is_not_echoed(committed_runtime, burnbox):
    _account(committed_runtime)
    result = burnbox("set-password", EMAIL, "--password", "Another-secret-42")
    assert result.exit_code == 0, result.output
    assert "Another-secret-42" not in result.output
    client = app_with(committed_runtime).test_client()
    assert login(client, EMAIL, "Another-secret-42").status_code == 200


def test_an_unknown_address_or_a_weak_password_is_one_line_and_changes_nothing(
        committed_runtime, burnbox):
    _account(committed_runtime)
    with committed_runtime.db.session() as session:
        before = session.scalar(select(User.password_hash))
    unknown = burnbox("set-password", "nobody@example.test")
    assert unknown.exit_code == 1
    assert unknown.stderr.strip() == "Error: no account with the e-mail address nobody@example.test"
    weak = burnbox("set-password", EMAIL, "--password", "short")
    assert weak.exit_code == 1
    assert "password: must be at least 8 characters" in weak.stderr
    assert "Traceback" not in unknown.output + weak.output
    with committed_runtime.db.session() as session:
        assert session.scalar(select(User.password_hash)) == before
