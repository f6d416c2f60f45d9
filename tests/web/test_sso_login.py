"""Signing in with SSO against a real OpenID provider (oidc-provider-mock on localhost): the
first sign-in provisions the account from a domain mapping, the next ones find it by identity,
the session limit hands over to POST /auth/login/resolve, identities are linked and unlinked,
enforce_sso refuses passwords, and the browser binding and single-use state and code hold."""

import logging
from urllib.parse import parse_qs, urlsplit

import pytest
from sqlalchemy import select

from burnbox.secretbox import new_key
from burnbox.timeutil import utcnow
from models.identity.users import User, find_by_email
from models.platform.audit import AuditEntry
from models.sso.identities import SsoIdentity
from models.tenancy.orgs import OrgMember
from models.tenancy.teams import TeamMember
from tests.apikey_helpers import key_auth, make_key
from tests.factories.identity import make_password_user
from tests.identity import PASSWORD, bearer, login
from tests.oidc_provider import (
    CLIENT_ID,
    CLIENT_SECRET,
    mock_provider,
    mock_sign_in,
    set_mock_user,
)

SSO = "/api/v1/auth/sso"
ADMIN_SSO = "/api/v1/admin/sso/providers"
DOMAIN = "corp.example"


@pytest.fixture
def issuer(request):
    """The mock provider's issuer; parametrized indirectly with False, a provider whose ID
    tokens carry no user claims (they come from its UserInfo endpoint)."""
    with mock_provider(claims_in_id_token=getattr(request, "param", True)) as url:
        yield url


# Both ways providers hand over the user's claims: in the ID token (the mock as it ships,
# Google, Keycloak) and only from UserInfo (a conformant provider's default).
BOTH_CLAIM_SOURCES = pytest.mark.parametrize("issuer", [True, False], indirect=True,
                                             ids=["claims in the ID token", "from UserInfo"])


@pytest.fixture
def sso(make_app):
    """A client of an app that can keep a client secret and reach a provider on loopback."""
    return make_app(**{"secrets.encryption_keys": (new_key(),),
                       "sso.allow_private_issuers": True}).test_client()


@pytest.fixture
def corp(sso, world, issuer):
    """Provider `corp` at the mock, mapping corp.example into org A (admin) and team T
    (member)."""
    admin = world.headers["sysadmin"]
    created = sso.post(ADMIN_SSO, headers=admin, json={
        "name": "corp", "issuer_url": issuer, "client_id": CLIENT_ID,
        "client_secret": CLIENT_SECRET})
    assert created.status_code == 201, created.get_json()
    provider_id = created.get_json()["id"]
    mapped = sso.post(f"{ADMIN_SSO}/{provider_id}/domain-mappings", headers=admin, json={
        "domain": DOMAIN, "org_id": str(world.ids["org"]), "org_role": "admin",
        "team_id": str(world.ids["team"]), "team_role": "member"})
    assert mapped.status_code == 201, mapped.get_json()
    set_mock_user(issuer, "alice-1", email=f"alice@{DOMAIN}", email_verified=True,
                  name="Alice Corp")
    return provider_id


def start(client, name="corp", **kwargs):
    response = client.get(f"{SSO}/{name}", **kwargs)
    assert response.status_code == 302, response.get_data(as_text=True)
    return response.headers["Location"]


def back(client, redirect):
    """Follow the provider's redirect to the callback; the callback's redirect."""
    parts = urlsplit(redirect)
    response = client.get(f"{parts.path}?{parts.query}")
    assert response.status_code == 302, response.get_data(as_text=True)
    return response.headers["Location"]


def sign_in_flow(client, sub="alice-1", name="corp"):
    return back(client, mock_sign_in(start(client, name), sub))


def sso_code(location):
    assert location.startswith("/login?sso_code="), location
    return parse_qs(urlsplit(location).query)["sso_code"][0]


def fragment(location):
    return {k: v[0] for k, v in parse_qs(urlsplit(location).fragment).items()}


def exchange(client, code, **body):
    return client.post(f"{SSO}/exchange", json={"code": code, **body})


def actions(runtime, *names, actor_id=None):
    query = select(AuditEntry).where(AuditEntry.action.in_(names))
    if actor_id is not None:
        query = query.where(AuditEntry.actor_id == actor_id)
    with runtime.db.session() as session:
        return [e.action for e in session.scalars(query.order_by(AuditEntry.created_at))]


def test_the_start_redirects_to_the_provider_with_state_nonce_and_pkce_s256(sso, corp, issuer):
    location = start(sso)
    query = {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}
    assert location.startswith(f"{issuer}/oauth2/authorize?")
    assert query["code_challenge_method"] == "S256" and len(query["code_challenge"]) == 43
    assert query["client_id"] == CLIENT_ID and "openid" in query["scope"].split()
    assert len(query["state"]) >= 40 and len(query["nonce"]) >= 40
    assert query["redirect_uri"].endswith("/api/v1/auth/sso/corp/callback")
    assert "prompt" not in query  # a sign-in may reuse the provider's session; a link may not


@BOTH_CLAIM_SOURCES
def test_a_first_sign_in_provisions_an_sso_only_account_with_the_mapped_memberships(
        sso, corp, runtime, world):
    tokens = exchange(sso, sso_code(sign_in_flow(sso))).get_json()
    assert set(tokens) == {"user", "tokens"} and tokens["tokens"]["refresh_token"]
    me = sso.get("/api/v1/auth/me", headers=bearer(tokens["tokens"]["access_token"])).get_json()
    assert (me["email"], me["display_name"], me["email_verified"]) == (
        f"alice@{DOMAIN}", "Alice Corp", True)
    with runtime.db.session() as session:
        user = find_by_email(session, f"alice@{DOMAIN}")
        assert user.password_hash is None
        assert session.get(OrgMember, (world.ids["org"], user.id)).role == "admin"
        assert session.get(TeamMember, (world.ids["team"], user.id)).role == "member"
        [identity] = session.scalars(select(SsoIdentity).where(SsoIdentity.user_id == user.id))
        assert identity.subject == "alice-1"
    shown = sso.get(f"{ADMIN_SSO}/{corp}", headers=world.headers["sysadmin"]).get_json()
    assert shown["linked_user_count"] == 1
    assert sorted(actions(runtime, "auth.sso_provision", "auth.sso_link", "auth.login",
                          actor_id=user.id)) == ["auth.login", "auth.sso_link",
                                                 "auth.sso_provision"]


@BOTH_CLAIM_SOURCES
def test_a_returning_sign_in_finds_the_account_by_identity_and_the_code_is_single_use(
        sso, corp, runtime):
    first = exchange(sso, sso_code(sign_in_flow(sso))).get_json()["user"]["id"]
    code = sso_code(sign_in_flow(sso))
    again = exchange(sso, code)
    assert again.status_code == 200 and again.get_json()["user"]["id"] == first
    replayed = exchange(sso, code)
    assert replayed.status_code == 401
    assert replayed.get_json() == {"error": "invalid or expired code", "code": "unauthenticated"}
    with runtime.db.session() as session:
        assert len(list(session.scalars(select(User).where(User.email == f"alice@{DOMAIN}")))) == 1


def test_the_exchange_in_cookie_mode_sets_the_refresh_cookie_and_leaves_it_out_of_the_json(
        sso, corp):
    answer = exchange(sso, sso_code(sign_in_flow(sso)), use_cookie=True)
    assert answer.status_code == 200
    assert "refresh_token" not in answer.get_json()["tokens"]
    assert "bb_refresh_token=" in answer.headers["Set-Cookie"]


def test_a_password_account_with_the_verified_address_is_linked_not_duplicated(
        sso, corp, runtime):
    with runtime.db.transaction() as session:
        owner = make_password_user(session, runtime.settings, email=f"alice@{DOMAIN}",
                                   email_verified=True).id
    signed_in = exchange(sso, sso_code(sign_in_flow(sso))).get_json()
    assert signed_in["user"]["id"] == str(owner)


def test_an_account_whose_address_is_unverified_is_not_taken_over_by_address(
        sso, corp, runtime):
    # Registered by whoever typed the address first, with a password they keep.
    with runtime.db.transaction() as session:
        make_password_user(session, runtime.settings, email=f"alice@{DOMAIN}")
    location = sign_in_flow(sso)
    assert "not verified" in fragment(location)["error"], location
    with runtime.db.session() as session:
        assert session.scalar(select(SsoIdentity)) is None


@BOTH_CLAIM_SOURCES
def test_an_unverified_or_unmapped_address_is_refused_logged_and_nothing_is_created(
        sso, corp, issuer, runtime, caplog):
    set_mock_user(issuer, "eve", email=f"eve@{DOMAIN}", email_verified=False)
    set_mock_user(issuer, "bob", email="bob@elsewhere.example", email_verified=True)
    with caplog.at_level(logging.INFO, logger="models.sso.signin"):
        refused = {sub: fragment(sign_in_flow(sso, sub))["error"] for sub in ("eve", "bob")}
    assert refused == {
        "eve": "the identity provider did not vouch for a verified e-mail address",
        "bob": "no account for this address here: ask for an invitation"}
    # The server log has each refusal with its reason, not only the audit log.
    logged = [(r.levelname, r.getMessage(), r.provider, r.reason) for r in caplog.records
              if r.name == "models.sso.signin"]
    assert logged == [("WARNING", "SSO sign-in refused", "corp", refused["eve"]),
                      ("WARNING", "SSO sign-in refused", "corp", refused["bob"])]
    with runtime.db.session() as session:
        assert find_by_email(session, f"eve@{DOMAIN}") is None
        assert find_by_email(session, "bob@elsewhere.example") is None
    assert "auth.sso_login_failed" in actions(runtime, "auth.sso_login_failed")


def test_the_session_limit_through_sso_redirects_with_a_pending_token_that_resolve_finishes(
        sso, corp, runtime):
    exchange(sso, sso_code(sign_in_flow(sso)))
    with runtime.db.transaction() as session:
        find_by_email(session, f"alice@{DOMAIN}").max_sessions = 1
    location = sign_in_flow(sso)
    assert location.startswith("/login#"), location
    found = fragment(location)
    assert (found["session_conflict"], found["limit"]) == ("true", "1")
    pending = sso.get("/api/v1/auth/login/pending-sessions",
                      query_string={"token": found["pending_token"]}).get_json()
    assert pending["limit"] == 1 and len(pending["sessions"]) == 1
    resolved = sso.post("/api/v1/auth/login/resolve", json={
        "pending_token": found["pending_token"],
        "revoke_session_id": pending["sessions"][0]["id"]})
    assert resolved.status_code == 200, resolved.get_json()
    assert resolved.get_json()["user"]["email"] == f"alice@{DOMAIN}"


def test_a_forged_state_or_another_browser_finishing_the_sign_in_is_refused(sso, corp,
                                                                             make_app):
    redirect = mock_sign_in(start(sso), "alice-1")
    parts = urlsplit(redirect)
    forged = redirect.replace("state=", "state=x")
    assert back(sso, forged).startswith("/login#error=")
    other_browser = make_app(**{"secrets.encryption_keys": (new_key(),),
                                "sso.allow_private_issuers": True}).test_client()
    location = back(other_browser, redirect)
    assert "another%20browser" in location, location
    # The state was spent by that attempt: the right browser cannot reuse it either.
    assert "expired%20or%20was%20already%20used" in back(sso, f"{parts.path}?{parts.query}")


def test_two_sign_ins_in_one_browser_and_a_stray_callback_do_not_cancel_each_other(
        sso, corp, issuer):
    set_mock_user(issuer, "bob-2", email=f"bob@{DOMAIN}", email_verified=True)
    first = mock_sign_in(start(sso), "alice-1")
    second = mock_sign_in(start(sso), "bob-2")
    # A stray link to the callback (no state, or one nobody issued) is refused on its own.
    assert back(sso, f"{SSO}/corp/callback").startswith("/login#error=")
    assert back(sso, f"{SSO}/corp/callback?state=stray&code=x").startswith("/login#error=")
    signed_in = [exchange(sso, sso_code(back(sso, redirect))).get_json()["user"]["email"]
                 for redirect in (second, first)]
    assert signed_in == [f"bob@{DOMAIN}", f"alice@{DOMAIN}"]


def test_an_unknown_or_disabled_provider_sends_the_browser_back_with_an_error(sso, corp, world):
    assert sso.get(f"{SSO}/nobody").headers["Location"] == (
        "/login#error=no%20such%20SSO%20provider")
    sso.put(f"{ADMIN_SSO}/{corp}", json={"enabled": False}, headers=world.headers["sysadmin"])
    assert sso.get(f"{SSO}/corp").headers["Location"].startswith("/login#error=")


def test_get_on_the_exchange_is_a_405_not_a_provider_named_exchange(sso, corp):
    answer = sso.get(f"{SSO}/exchange")
    assert answer.status_code == 405, answer.headers.get("Location")
    assert answer.get_json() == {"error": "method not allowed", "code": "method_not_allowed"}
    assert "POST" in answer.headers["Allow"] and "GET" not in answer.headers["Allow"]


def test_a_provider_part_no_name_can_have_is_an_unknown_route_on_every_backend(sso, corp):
    """A NUL reached the database as a provider name: PostgreSQL refuses it in text and JSON,
    so the refused callback's audit entry failed its commit with a 500."""
    for path in (f"{SSO}/%00x/callback?state=abc", f"{SSO}/%00x", f"{SSO}/Corp",
                 f"{SSO}/c%0Aorp/callback?state=abc"):
        answer = sso.get(path)
        assert answer.status_code == 404, path
        assert answer.get_json()["code"] == "not_found"


def test_linking_binds_to_the_signed_in_session_and_unlinking_the_last_way_in_is_refused(
        sso, corp, issuer, runtime, world):
    with runtime.db.transaction() as session:
        make_password_user(session, runtime.settings, email="pat@example.test")
    access = login(sso, "pat@example.test", PASSWORD).get_json()["tokens"]["access_token"]
    set_mock_user(issuer, "pat-9", email="pat@other.example", email_verified=True)
    started = sso.get(f"{SSO}/corp", query_string={"link": "true"}, headers=bearer(access))
    assert started.status_code == 200, started.get_json()
    # The provider is asked to make the person sign in again, not to reuse its session.
    asked = parse_qs(urlsplit(started.get_json()["authorization_url"]).query)
    assert asked["prompt"] == ["login"]
    location = back(sso, mock_sign_in(started.get_json()["authorization_url"], "pat-9"))
    assert location == "/profile?sso_linked=corp"
    listed = sso.get("/api/v1/auth/me/sso", headers=bearer(access)).get_json()
    assert [(i["provider"], i["subject"]) for i in listed] == [("corp", "pat-9")]
    # The same provider account cannot be linked to a second user.
    other = exchange(sso, sso_code(sign_in_flow(sso))).get_json()["tokens"]["access_token"]
    again = sso.get(f"{SSO}/corp", query_string={"link": "true"}, headers=bearer(other))
    assert back(sso, mock_sign_in(again.get_json()["authorization_url"], "pat-9")).startswith(
        "/profile?sso_error=")
    # Alice has no password: her only identity is her only way in.
    refused = sso.delete("/api/v1/auth/me/sso/corp", headers=bearer(other))
    assert refused.status_code == 409 and refused.get_json()["code"] == "conflict"
    # Pat signs in through the provider too; unlinking ends that session, not the others.
    through_sso = exchange(sso, sso_code(sign_in_flow(sso, "pat-9"))).get_json()
    sso_access = through_sso["tokens"]["access_token"]
    unlinked = sso.delete("/api/v1/auth/me/sso/corp", headers=bearer(access))
    assert unlinked.status_code == 200
    assert sso.get("/api/v1/auth/me", headers=bearer(sso_access)).status_code == 401
    assert sso.get("/api/v1/auth/me/sso", headers=bearer(access)).get_json() == []
    assert sso.delete("/api/v1/auth/me/sso/corp", headers=bearer(access)).status_code == 404
    assert actions(runtime, "auth.sso_unlink") == ["auth.sso_unlink"]


def test_a_link_whose_session_ended_meanwhile_is_refused(sso, corp, issuer, runtime):
    with runtime.db.transaction() as session:
        make_password_user(session, runtime.settings, email="pat@example.test")
    access = login(sso, "pat@example.test", PASSWORD).get_json()["tokens"]["access_token"]
    started = sso.get(f"{SSO}/corp", query_string={"link": "true"}, headers=bearer(access))
    assert sso.post("/api/v1/auth/logout", json={}, headers=bearer(access)).status_code == 200
    location = back(sso, mock_sign_in(started.get_json()["authorization_url"], "alice-1"))
    assert location.startswith("/profile?sso_error="), location
    with runtime.db.session() as session:
        assert session.scalar(select(SsoIdentity)) is None


def test_api_keys_are_refused_on_identities_and_on_starting_a_link(sso, corp, world):
    key = key_auth(make_key(sso, world, "lead")["raw_key"])
    for method, path, kwargs in (("GET", "/api/v1/auth/me/sso", {}),
                                 ("DELETE", "/api/v1/auth/me/sso/corp", {}),
                                 ("GET", f"{SSO}/corp", {"query_string": {"link": "true"}})):
        response = sso.open(path, method=method, headers=key, **kwargs)
        assert response.status_code == 403, (path, response.get_json())


def test_enforce_sso_refuses_a_password_login_on_a_mapped_domain_and_status_says_so(
        sso, corp, runtime, world):
    with runtime.db.transaction() as session:
        make_password_user(session, runtime.settings, email=f"carol@{DOMAIN}")
        make_password_user(session, runtime.settings, email="dave@example.test")
        make_password_user(session, runtime.settings, email=f"root@{DOMAIN}",
                           is_system_admin=True)
    status = sso.get("/api/v1/auth/sso-status").get_json()
    assert (status["sso_enabled"], status["enforce_sso"]) == (True, False)
    assert [p["name"] for p in status["providers"]] == ["corp"]
    assert login(sso, f"carol@{DOMAIN}").status_code == 200
    changed = sso.put("/api/v1/admin/platform", json={"enforce_sso": True},
                      headers=world.headers["sysadmin"])
    assert changed.status_code == 200, changed.get_json()
    refused = login(sso, f"carol@{DOMAIN}")
    assert refused.status_code == 403, refused.get_json()
    assert refused.get_json()["code"] == "forbidden" and "corp" in refused.get_json()["error"]
    assert refused.get_json()["sso_providers"] == ["corp"]
    assert login(sso, f"carol@{DOMAIN}", "wrong password").status_code == 401
    assert login(sso, "dave@example.test").status_code == 200  # no mapping covers the domain
    assert login(sso, f"root@{DOMAIN}").status_code == 200  # system administrators exempt
    sso.put("/api/v1/admin/platform", json={"enforce_sso_for_system_admins": True},
            headers=world.headers["sysadmin"])
    assert login(sso, f"root@{DOMAIN}").status_code == 403
    assert sso.get("/api/v1/auth/sso-status").get_json()["enforce_sso"] is True
    # Nor can a password account be registered on the domain (the answer depends on the
    # domain only).
    registered = sso.post("/api/v1/auth/register", json={
        "email": f"new@{DOMAIN}", "password": "a long enough password 1",
        "display_name": "New"})
    assert registered.status_code == 403 and "corp" in registered.get_json()["error"]


def test_an_org_can_enforce_sso_for_the_domains_mapped_into_it(sso, corp, runtime, world):
    with runtime.db.transaction() as session:
        make_password_user(session, runtime.settings, email=f"carol@{DOMAIN}")
    path = f"/api/v1/orgs/{world.ids['org']}/settings"
    changed = sso.patch(path, json={"enforce_sso": True}, headers=world.headers["owner"])
    assert changed.status_code == 200, changed.get_json()
    assert changed.get_json()["enforce_sso"] is True
    assert changed.get_json()["effective"]["enforce_sso"] is True
    assert login(sso, f"carol@{DOMAIN}").status_code == 403
    assert sso.patch(path, json={"enforce_sso": "yes"},
                     headers=world.headers["owner"]).status_code == 400


def test_migrate_auth_to_sso_needs_a_linked_identity(sso, corp, issuer, runtime, world):
    with runtime.db.transaction() as session:
        user_id = make_password_user(session, runtime.settings, email=f"carol@{DOMAIN}",
                                     email_verified=True).id
    path = f"/api/v1/admin/users/{user_id}/migrate-auth"
    admin = world.headers["sysadmin"]
    assert sso.post(path, json={"target": "sso"}, headers=admin).status_code == 409
    set_mock_user(issuer, "carol-2", email=f"carol@{DOMAIN}", email_verified=True)
    exchange(sso, sso_code(sign_in_flow(sso, "carol-2")))
    migrated = sso.post(path, json={"target": "sso"}, headers=admin)
    assert migrated.status_code == 200 and migrated.get_json()["auth_method"] == "sso"


def test_a_disabled_account_is_sent_back_with_the_reason_not_signed_in(sso, corp, runtime):
    exchange(sso, sso_code(sign_in_flow(sso)))
    with runtime.db.transaction() as session:
        find_by_email(session, f"alice@{DOMAIN}").disabled_at = utcnow()
    location = sign_in_flow(sso)
    assert location.startswith("/login#error="), location
    assert "disabled" in fragment(location)["error"]


def test_a_mapping_without_a_role_takes_the_provider_s_default_org_role(sso, corp, world):
    admin = world.headers["sysadmin"]
    sso.put(f"{ADMIN_SSO}/{corp}", json={"default_org_role": "admin"}, headers=admin)
    mapped = sso.post(f"{ADMIN_SSO}/{corp}/domain-mappings", headers=admin, json={
        "domain": "eu.corp.example", "org_id": str(world.ids["other_org"])})
    assert mapped.status_code == 201 and mapped.get_json()["org_role"] == "admin"


def test_a_kept_key_that_no_longer_verifies_is_fetched_again(sso, corp, issuer):
    """The process keeps a JWKS whose key has the provider's `kid` but other material (a
    provider that replaced its key under the same `kid`, or one that took over an address
    another provider used: two test providers on a reused port): the sign-in still works."""
    import requests
    from cryptography.hazmat.primitives.asymmetric import rsa
    from jwt import PyJWKSet
    from jwt.algorithms import RSAAlgorithm

    from models.sso import oidc

    jwks_uri = requests.get(f"{issuer}/.well-known/openid-configuration",
                            timeout=10).json()["jwks_uri"]
    published = requests.get(jwks_uri, timeout=10).json()["keys"]
    stale = []
    for key in published:
        other = rsa.generate_private_key(public_exponent=65537, key_size=2048).public_key()
        stale.append({**RSAAlgorithm.to_jwk(other, as_dict=True),
                      **{name: key[name] for name in ("kid", "alg", "use") if name in key}})
    oidc._keys.put(jwks_uri, PyJWKSet.from_dict({"keys": stale}))
    tokens = exchange(sso, sso_code(sign_in_flow(sso))).get_json()
    assert tokens["user"]["email"] == f"alice@{DOMAIN}"
