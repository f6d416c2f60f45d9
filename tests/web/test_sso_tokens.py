"""ID tokens the sign-in must refuse, from a provider of the tests' own (tests.oidc_provider:
a real HTTP server on 127.0.0.1 that can issue what a correct provider never would): another
audience, another issuer, another nonce, expired, unsigned, signed by an unpublished key; a
replayed callback; key rotation; a provider that is down. Every refusal lands on
/login#error=... and signs nobody in."""

from urllib.parse import parse_qs, unquote, urlsplit

import pytest
from sqlalchemy import select

from burnbox.kv import RedisStore
from burnbox.secretbox import new_key
from models.identity.users import find_by_email
from models.sso.identities import SsoIdentity
from tests.oidc_provider import CLIENT_ID, CLIENT_SECRET, authorize_at, own_provider
from tests.processes import free_port

SSO = "/api/v1/auth/sso"
DOMAIN = "corp.example"


@pytest.fixture
def op():
    with own_provider() as provider:
        provider.users["alice"] = {"email": f"alice@{DOMAIN}", "email_verified": True,
                                   "name": "Alice"}
        yield provider


@pytest.fixture
def sso(make_app, op, world):
    """A client of an app with provider `corp` at `op`, auto-provisioning (no mapping)."""
    client = make_app(**{"secrets.encryption_keys": (new_key(),),
                         "sso.allow_private_issuers": True}).test_client()
    created = client.post("/api/v1/admin/sso/providers", headers=world.headers["sysadmin"], json={
        "name": "corp", "issuer_url": op.issuer, "client_id": CLIENT_ID,
        "client_secret": CLIENT_SECRET, "auto_provision": True})
    assert created.status_code == 201, created.get_json()
    return client


def callback_url(client, sub="alice"):
    started = client.get(f"{SSO}/corp")
    assert started.status_code == 302, started.get_data(as_text=True)
    parts = urlsplit(authorize_at(started.headers["Location"], sub))
    return f"{parts.path}?{parts.query}"


def finish(client, url):
    response = client.get(url)
    assert response.status_code == 302
    return response.headers["Location"]


def error_of(location):
    assert location.startswith("/login#error="), location
    return unquote(location.split("#error=", 1)[1])


def signed_in(client, location):
    assert location.startswith("/login?sso_code="), location
    code = parse_qs(urlsplit(location).query)["sso_code"][0]
    response = client.post(f"{SSO}/exchange", json={"code": code})
    assert response.status_code == 200, response.get_json()
    return response.get_json()["user"]


def test_a_good_token_signs_in_after_pkce_and_the_client_secret_are_checked(sso, op):
    user = signed_in(sso, finish(sso, callback_url(sso)))
    assert (user["email"], user["display_name"]) == (f"alice@{DOMAIN}", "Alice")
    assert op.token_requests == 1
    assert op.userinfo_requests == 0  # the ID token had the claims: no UserInfo call


@pytest.mark.parametrize("userinfo_as", ["json", "jwt"])
def test_claims_only_in_userinfo_sign_in_whether_it_answers_json_or_a_signed_jwt(
        sso, op, userinfo_as):
    op.claims_in_id_token, op.userinfo_as = False, userinfo_as
    user = signed_in(sso, finish(sso, callback_url(sso)))
    assert (user["email"], user["display_name"]) == (f"alice@{DOMAIN}", "Alice")
    assert op.userinfo_requests == 1


@pytest.mark.parametrize(("userinfo_as", "tamper", "reason"), [
    ("json", {"sub": "mallory"}, "the UserInfo answer is about another user than the ID token"),
    ("jwt", {"sub": "mallory"}, "the UserInfo answer is about another user than the ID token"),
    ("jwt", {"aud": "someone-else"}, "the signed UserInfo answer is not valid: Audience "
                                     "doesn't match"),
    ("jwt", {"iss": "https://evil.example"}, "the signed UserInfo answer is not valid: "
                                             "Invalid issuer"),
])
def test_a_userinfo_answer_about_someone_else_or_for_another_client_is_refused(
        sso, op, runtime, userinfo_as, tamper, reason):
    op.claims_in_id_token, op.userinfo_as, op.userinfo_tamper = False, userinfo_as, tamper
    assert error_of(finish(sso, callback_url(sso))) == f"the sign-in was refused: {reason}"
    with runtime.db.session() as session:
        assert find_by_email(session, f"alice@{DOMAIN}") is None
        assert session.scalar(select(SsoIdentity)) is None


def test_a_failing_userinfo_endpoint_sends_the_browser_back_with_a_clear_error(sso, op):
    op.claims_in_id_token, op.userinfo_status = False, 503
    assert error_of(finish(sso, callback_url(sso))) == (
        "the identity provider is unavailable or refused the code; try again")


@pytest.mark.parametrize(("tamper", "reason"), [
    ({"aud": "someone-else"}, "the sign-in was refused: the ID token was issued for another "
                              "client"),
    ({"iss": "https://evil.example"}, "the sign-in was refused: the ID token was issued by "
                                      "another issuer"),
    ({"nonce": "not-the-one-sent"}, "the sign-in was refused: the ID token's nonce does not "
                                    "match this sign-in"),
    ({"exp": 1_000_000_000, "iat": 999_999_000}, "the sign-in was refused: the ID token has "
                                                 "expired"),
    ({"unsigned": True}, "the sign-in was refused: the ID token's algorithm 'none' is not "
                         "accepted (unsigned and shared-secret tokens are refused)"),
    ({"kid": "unpublished"}, "the sign-in was refused: the ID token is signed with a key the "
                             "provider does not publish"),
])
def test_a_bad_id_token_is_refused_and_nobody_is_signed_in(sso, op, runtime, tamper, reason):
    op.tamper = tamper
    assert error_of(finish(sso, callback_url(sso))) == reason
    with runtime.db.session() as session:
        assert find_by_email(session, f"alice@{DOMAIN}") is None
        assert session.scalar(select(SsoIdentity)) is None


def test_a_token_signed_by_another_key_under_the_published_kid_is_refused(sso, op):
    published = op.public
    op.rotate()
    op.public = {**published}  # the old key is published, the token is signed by the new one
    op.kid = published["kid"]
    assert error_of(finish(sso, callback_url(sso))) == (
        "the sign-in was refused: the ID token's signature is not valid")


def test_a_replayed_callback_is_refused(sso, op):
    url = callback_url(sso)
    signed_in(sso, finish(sso, url))
    assert error_of(finish(sso, url)) == (
        "this sign-in has expired or was already used; start again")


def test_a_rotated_key_is_fetched_once_and_then_kept(sso, op):
    signed_in(sso, finish(sso, callback_url(sso)))
    signed_in(sso, finish(sso, callback_url(sso)))
    assert op.jwks_fetches == 1  # kept between sign-ins
    op.rotate()
    signed_in(sso, finish(sso, callback_url(sso)))
    assert op.jwks_fetches == 2  # the unknown kid made one refetch


def test_a_provider_that_is_down_sends_the_browser_back_with_a_clear_error(sso, op):
    url = callback_url(sso)
    op.server.shutdown()
    op.server.server_close()
    assert error_of(finish(sso, url)) == (
        "the identity provider is unavailable or refused the code; try again")
    assert error_of(sso.get(f"{SSO}/corp").headers["Location"]) == (
        "the identity provider is unavailable; try again later")


def test_the_provider_s_own_error_is_named_by_its_code_only(sso, op):
    started = sso.get(f"{SSO}/corp").headers["Location"]
    state = parse_qs(urlsplit(started).query)["state"][0]
    location = finish(sso, f"{SSO}/corp/callback?state={state}&error=access_denied"
                           "&error_description=<script>secret</script>")
    assert error_of(location) == "the identity provider refused the sign-in (access_denied)"


def test_a_provider_on_loopback_is_refused_unless_private_issuers_are_allowed(
        make_app, op, sso):
    strict = make_app(**{"secrets.encryption_keys": (new_key(),)}).test_client()
    assert error_of(strict.get(f"{SSO}/corp").headers["Location"]) == (
        "the identity provider is unavailable; try again later")


def test_with_the_key_value_store_down_the_sign_in_says_so_and_the_exchange_is_refused(
        make_app, op, sso):
    down = RedisStore(f"redis://127.0.0.1:{free_port()}/0")  # nothing listens there
    client = make_app(store=down, **{"secrets.encryption_keys": (new_key(),),
                                     "sso.allow_private_issuers": True}).test_client()
    assert error_of(client.get(f"{SSO}/corp").headers["Location"]) == (
        "single sign-on is unavailable right now; try again later")
    assert error_of(finish(client, f"{SSO}/corp/callback?state=x&code=y")) == (
        "single sign-on is unavailable right now; try again later")
    refused = client.post(f"{SSO}/exchange", json={"code": "anything"})
    assert refused.status_code == 401


def test_an_oversized_state_or_code_is_sent_back_with_an_error_not_answered_json(sso, op):
    malformed = "the answer brought back from the identity provider is malformed; start again"
    assert error_of(finish(sso, f"{SSO}/corp/callback?state={'s' * 600}&code=c")) == malformed
    parts = urlsplit(callback_url(sso))
    query = parse_qs(parts.query)
    oversized = f"{parts.path}?state={query['state'][0]}&code={'c' * 5000}"
    assert error_of(finish(sso, oversized)) == malformed
    assert op.token_requests == 0


def test_a_state_or_code_with_a_control_character_is_sent_back_with_an_error(sso, op):
    """The callback's parameters are plain strings (a browser must get a redirect, never a JSON
    400), so the sign-in refuses a NUL or another control character itself."""
    malformed = "the answer brought back from the identity provider is malformed; start again"
    assert error_of(finish(sso, f"{SSO}/corp/callback?state=s%00tate&code=c")) == malformed
    parts = urlsplit(callback_url(sso))
    state = parse_qs(parts.query)["state"][0]
    assert error_of(finish(sso, f"{parts.path}?state={state}&code=c%01de")) == malformed
    assert op.token_requests == 0
