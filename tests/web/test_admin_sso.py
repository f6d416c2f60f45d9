"""/admin/sso/providers and /admin/sso/test: system administrators only, the client secret
sealed at rest and never shown, every change audited as critical, and the provider test
reaching a real HTTP server on loopback through the outbound guard (refused by default)."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm
from sqlalchemy import select

from burnbox.secretbox import new_key
from models.sso.providers import SsoProvider
from tests.admin_helpers import assert_admin_only
from tests.web.conftest import audit_entries

PROVIDERS = "/api/v1/admin/sso/providers"
TEST = "/api/v1/admin/sso/test"
SECRET = "client secret 0f 42 chars, do not echo it"


class _Documents(BaseHTTPRequestHandler):
    """Serves `server.documents` (path -> (status, body)) as JSON; 404 for other paths."""

    def do_GET(self) -> None:
        status, body = self.server.documents.get(self.path, (404, {"error": "not found"}))
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def issuer():
    """A real HTTP server on 127.0.0.1 serving an issuer's discovery document and JWKS; the
    test changes `server.documents` to break them."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Documents)
    server.daemon_threads = True
    base = f"http://127.0.0.1:{server.server_port}/realm"
    key = json.loads(RSAAlgorithm.to_jwk(
        rsa.generate_private_key(public_exponent=65537, key_size=2048).public_key()))
    server.documents = {
        "/realm/.well-known/openid-configuration": (200, {
            "issuer": base, "authorization_endpoint": f"{base}/authorize",
            "token_endpoint": f"{base}/token", "jwks_uri": f"{base}/jwks"}),
        "/realm/jwks": (200, {"keys": [{**key, "kid": "k1", "use": "sig", "alg": "RS256"}]}),
    }
    server.base = base
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture
def sealed(make_app):
    """A client of an app with an encryption key and loopback issuers allowed."""
    return make_app(**{"secrets.encryption_keys": (new_key(),),
                       "sso.allow_private_issuers": True}).test_client()


def _body(**changes):
    return {"name": "corp", "client_id": "burnbox-app", "client_secret": SECRET,
            "issuer_url": "https://id.example.com/realms/corp", **changes}


def _rows(runtime):
    with runtime.db.session() as session:
        return [(p.name, p.client_secret_sealed) for p in session.scalars(select(SsoProvider))]


def test_every_sso_admin_route_refuses_an_org_owner_and_a_system_admins_api_key(
        sealed, runtime, world):
    created = sealed.post(PROVIDERS, json=_body(), headers=world.headers["sysadmin"])
    one = f"{PROVIDERS}/{created.get_json()['id']}"
    for method, path, body in (("GET", PROVIDERS, None), ("POST", PROVIDERS, _body(name="x2")),
                               ("GET", one, None), ("PUT", one, {"enabled": False}),
                               ("DELETE", one, None),
                               ("POST", TEST, {"issuer_url": "https://id.example.com"})):
        assert_admin_only(sealed, runtime, world, method, path, body)
    shown = sealed.get(one, headers=world.headers["sysadmin"]).get_json()
    assert (shown["enabled"], [name for name, _ in _rows(runtime)]) == (True, ["corp"])


def test_the_client_secret_is_sealed_at_rest_and_never_shown(sealed, runtime, world):
    admin = world.headers["sysadmin"]
    created = sealed.post(PROVIDERS, json=_body(allowed_domains=["Corp.Example", "a.example"]),
                          headers=admin)
    assert created.status_code == 201, created.get_json()
    shown = created.get_json()
    assert shown["has_client_secret"] is True
    assert (shown["provider_type"], shown["allowed_domains"], shown["default_org_role"]) == (
        "oidc", ["a.example", "corp.example"], "member")
    [(_, stored)] = _rows(runtime)
    assert stored.startswith("fernet:") and SECRET not in stored
    for response in (created, sealed.get(PROVIDERS, headers=admin),
                     sealed.get(f"{PROVIDERS}/{shown['id']}", headers=admin)):
        assert SECRET not in response.get_data(as_text=True)
        assert "client_secret" not in json.dumps(response.get_json()).replace(
            "has_client_secret", "")
    [entry] = audit_entries(runtime, "sso.provider_create")
    assert entry.severity == "critical" and entry.after["secret_changed"] is True
    assert SECRET not in json.dumps(entry.after)


def test_a_secret_without_an_encryption_key_is_refused_and_nothing_is_stored(client, runtime,
                                                                             world):
    response = client.post(PROVIDERS, json=_body(), headers=world.headers["sysadmin"])
    assert response.status_code == 400
    assert "encryption" in response.get_json()["details"]["client_secret"][0]
    assert _rows(runtime) == []
    public = client.post(PROVIDERS, json=_body(client_secret=""),
                         headers=world.headers["sysadmin"])
    assert (public.status_code, public.get_json()["has_client_secret"]) == (201, False)


def test_an_update_keeps_an_absent_or_empty_secret_and_seals_a_new_one(sealed, runtime, world):
    admin = world.headers["sysadmin"]
    pid = sealed.post(PROVIDERS, json=_body(), headers=admin).get_json()["id"]
    [(_, first)] = _rows(runtime)
    kept = sealed.put(f"{PROVIDERS}/{pid}", json={"client_secret": "", "enabled": False},
                      headers=admin)
    assert (kept.status_code, kept.get_json()["enabled"]) == (200, False)
    assert _rows(runtime) == [("corp", first)]
    changed = sealed.put(f"{PROVIDERS}/{pid}", json={"client_secret": "another secret"},
                         headers=admin)
    assert changed.get_json()["has_client_secret"] is True
    [(_, second)] = _rows(runtime)
    assert second != first and second.startswith("fernet:")
    entries = audit_entries(runtime, "sso.provider_update")
    assert [e.after["secret_changed"] for e in entries] in ([False, True], [True, False])
    assert {e.severity for e in entries} == {"critical"}


@pytest.mark.parametrize(("changes", "field"), [
    ({"name": "Corp"}, "name"), ({"name": "c"}, "name"), ({"name": "exchange"}, "name"),
    ({"issuer_url": "ftp://id.example.com"}, "issuer_url"),
    ({"issuer_url": ""}, "issuer_url"),
    ({"redirect_url": "not a url"}, "redirect_url"),
    ({"default_org_role": "emperor"}, "default_org_role"),
    ({"allowed_domains": ["not a domain"]}, "allowed_domains"),
    ({"provider_type": "azure", "issuer_url": ""}, "tenant_id"),
    ({"provider_type": "github"}, "provider_type"),
    ({"client_id": ""}, "client_id"), ({"client_id": "   "}, "client_id"),
    ({"client_id": "app\u202eid"}, "client_id"), ({"client_id": "app\u00a0id"}, "client_id"),
])
def test_bad_values_are_refused_with_the_field_named_and_nothing_is_stored(
        sealed, runtime, world, changes, field):
    response = sealed.post(PROVIDERS, json=_body(**changes), headers=world.headers["sysadmin"])
    assert response.status_code == 400, response.get_json()
    assert field in response.get_json()["details"]
    assert _rows(runtime) == []


def test_a_client_id_is_stored_trimmed(sealed, world):
    created = sealed.post(PROVIDERS, json=_body(client_id="  burnbox-app "),
                          headers=world.headers["sysadmin"])
    assert (created.status_code, created.get_json()["client_id"]) == (201, "burnbox-app")


def test_presets_fill_in_the_issuer_and_follow_a_change_of_tenant(sealed, world):
    admin = world.headers["sysadmin"]
    google = sealed.post(PROVIDERS, json=_body(name="google", provider_type="google",
                                               issuer_url=""), headers=admin).get_json()
    assert google["issuer_url"] == "https://accounts.google.com"
    azure = sealed.post(PROVIDERS, json=_body(name="azure", provider_type="azure",
                                              tenant_id="t1", issuer_url=""), headers=admin)
    assert azure.get_json()["issuer_url"] == "https://login.microsoftonline.com/t1/v2.0"
    moved = sealed.put(f"{PROVIDERS}/{azure.get_json()['id']}", json={"tenant_id": "t2"},
                       headers=admin).get_json()
    assert moved["issuer_url"] == "https://login.microsoftonline.com/t2/v2.0"


def test_names_are_unique_and_unknown_ids_are_404(sealed, runtime, world):
    admin = world.headers["sysadmin"]
    first = sealed.post(PROVIDERS, json=_body(), headers=admin).get_json()["id"]
    other = sealed.post(PROVIDERS, json=_body(name="other"), headers=admin).get_json()["id"]
    assert sealed.post(PROVIDERS, json=_body(), headers=admin).status_code == 409
    clash = sealed.put(f"{PROVIDERS}/{other}", json={"name": "corp"}, headers=admin)
    assert clash.status_code == 409
    missing = f"{PROVIDERS}/00000000-0000-4000-8000-000000000000"
    for method in ("GET", "PUT", "DELETE"):
        response = sealed.open(missing, method=method, json={} if method == "PUT" else None,
                               headers=admin)
        assert (response.status_code, response.get_json()["code"]) == (404, "not_found")
    assert sorted(name for name, _ in _rows(runtime)) == ["corp", "other"]
    assert sealed.delete(f"{PROVIDERS}/{first}", headers=admin).status_code == 200
    assert sealed.get(f"{PROVIDERS}/{first}", headers=admin).status_code == 404
    [entry] = audit_entries(runtime, "sso.provider_delete")
    assert (entry.severity, entry.before["name"]) == ("critical", "corp")


def test_the_provider_test_reads_discovery_and_jwks_from_a_real_server(sealed, world, issuer):
    admin = world.headers["sysadmin"]
    response = sealed.post(TEST, json={"issuer_url": issuer.base}, headers=admin)
    result = response.get_json()
    assert response.status_code == 200, result
    assert (result["success"], result["endpoint"], result["status_code"]) == (
        True, f"{issuer.base}/jwks", 200)
    assert "1 signing key" in result["message"] and result["response_time"] >= 0
    pid = sealed.post(PROVIDERS, json=_body(issuer_url=issuer.base),
                      headers=admin).get_json()["id"]
    stored = sealed.post(TEST, json={"provider_id": pid}, headers=admin).get_json()
    assert stored["success"] is True


def test_loopback_issuers_are_refused_unless_the_setting_allows_them(make_app, world, issuer):
    # The suite allows private webhook targets; the SSO guard has its own setting, off here.
    client = make_app().test_client()
    result = client.post(TEST, json={"issuer_url": issuer.base},
                         headers=world.headers["sysadmin"]).get_json()
    assert (result["success"], result["status_code"]) == (False, None)
    assert "internal address" in result["message"]
    assert "sso.allow_private_issuers = true" in result["message"]  # what allows it


@pytest.mark.parametrize("host", ["127.0.0.1", "[::1]", "localhost", "id.localhost", "10.1.2.3"])
def test_an_internal_issuer_is_refused_when_stored_in_the_words_of_the_test(
        make_app, runtime, world, issuer, host):
    """With the guard on, a provider at a loopback issuer was stored (201) and then failed
    every sign-in; creating or changing one says why at once, as the provider test does."""
    app = make_app(**{"secrets.encryption_keys": (new_key(),)})
    client = app.test_client()
    url = issuer.base.replace("127.0.0.1", host)
    created = client.post(PROVIDERS, json=_body(issuer_url=url),
                          headers=world.headers["sysadmin"])
    assert created.status_code == 400, created.get_json()
    assert created.get_json()["code"] == "validation_error"
    [problem] = created.get_json()["details"]["issuer_url"]
    assert problem.startswith(f"{url}/.well-known/openid-configuration refused: ")
    assert "sso.allow_private_issuers = true" in problem
    if host == "127.0.0.1":  # the test's own words for the same issuer
        tested = client.post(TEST, json={"issuer_url": url},
                             headers=world.headers["sysadmin"]).get_json()
        assert tested["message"] == problem
    assert _rows(runtime) == []
    stored = client.post(PROVIDERS, json=_body(), headers=world.headers["sysadmin"])
    assert stored.status_code == 201
    changed = client.put(f"{PROVIDERS}/{stored.get_json()['id']}", json={"issuer_url": url},
                         headers=world.headers["sysadmin"])
    assert changed.status_code == 400
    assert changed.get_json()["details"]["issuer_url"] == [problem]


@pytest.mark.parametrize(("path", "answer", "status", "words"), [
    ("/realm/.well-known/openid-configuration", (503, {"error": "down"}), 503, "HTTP 503"),
    ("/realm/.well-known/openid-configuration", (200, b"<html>"), 200, "JSON"),
    ("/realm/.well-known/openid-configuration", (200, {"issuer": "x"}), 200, "lacks"),
    ("/realm/jwks", (200, {"keys": []}), 200, "no usable key"),
    ("/realm/jwks", (404, {}), 404, "HTTP 404"),
])
def test_a_broken_provider_is_a_clear_failure_not_an_error(sealed, world, issuer, path, answer,
                                                           status, words):
    issuer.documents[path] = answer
    result = sealed.post(TEST, json={"issuer_url": issuer.base},
                         headers=world.headers["sysadmin"]).get_json()
    assert (result["success"], result["status_code"]) == (False, status)
    assert words in result["message"]


def test_a_document_naming_another_issuer_is_refused(sealed, world, issuer):
    discovery = "/realm/.well-known/openid-configuration"
    document = issuer.documents[discovery][1]
    issuer.documents[discovery] = (200, {**document, "issuer": "https://evil.example"})
    result = sealed.post(TEST, json={"issuer_url": issuer.base},
                         headers=world.headers["sysadmin"]).get_json()
    assert result["success"] is False and "names issuer https://evil.example" in result["message"]


def test_the_test_needs_an_issuer(sealed, world):
    admin = world.headers["sysadmin"]
    for body in ({}, {"issuer_url": "not a url"}, {"provider_type": "oidc"},
                 {"provider_type": "azure"}):
        response = sealed.post(TEST, json=body, headers=admin)
        assert (response.status_code, response.get_json()["code"]) == (400, "validation_error")
    assert sealed.post(TEST, json={"provider_id": "00000000-0000-4000-8000-000000000000"},
                       headers=admin).status_code == 404
