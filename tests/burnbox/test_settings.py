"""The settings object: every default, the precedence of its sources, aliases, and refusals."""

import re
import tomllib
from datetime import timedelta
from pathlib import Path

import pytest

from burnbox.durations import format_duration
from burnbox.settings import Settings, SettingsError, flatten, keys, load_settings, render_example
from burnbox.signing_secret import resolve_jwt_secret

EXAMPLE = Path(__file__).resolve().parents[2] / "burnbox.example.toml"
GOOD_SECRET = "k3Jq9vX2mB7pL0sD4fH8gT1wY6zR5nC0aE"


def _write(tmp_path, text):
    path = tmp_path / "burnbox.toml"
    path.write_text(text, encoding="utf-8")
    return str(path)


def _env_text(value):
    """A value written the way an operator would put it in an environment variable."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, timedelta):
        return format_duration(value)
    if isinstance(value, tuple):
        return ",".join(value)
    return str(value)


@pytest.mark.parametrize(("key", "expected"), [
    ("defaults.max_sessions_per_user", 5),
    ("defaults.webhook_max_retries", 3),
    ("defaults.webhook_timeout", timedelta(seconds=10)),
    ("defaults.inbox_ttl", timedelta(minutes=10)),
    ("defaults.inbox_max_ttl", timedelta(hours=24)),
    ("metrics.enabled", False),
    ("metrics.path", "/metrics"),
    ("metrics.host", "127.0.0.1"),
    ("smtp.metrics_port", 9125),
    ("worker.metrics_port", 9126),
    ("clock.metrics_port", 9127),
    ("auth.access_token_ttl", timedelta(minutes=15)),
    ("auth.pending_login_ttl", timedelta(minutes=5)),
    ("smtp.port", 2525),
    ("smtp.hostname", "localhost"),
    ("http.port", 8080),
    ("http.trusted_proxies", ()),
    ("webhooks.allow_private_targets", False),
    ("dns.nameservers", ()),
    ("dns.timeout", timedelta(seconds=5)),
    ("clock.dns_recheck_interval", timedelta(hours=1)),
    ("wait.max_timeout", timedelta(minutes=5)),
    ("mcp.host", "127.0.0.1"),
    ("mcp.port", 8081),
    ("mcp.api_url", ""),
    ("mcp.allowed_hosts", ()),
    ("mcp.allowed_origins", ()),
    ("mcp.max_body_chars", 20_000),
    ("env", "development"),
])
def test_the_keys_the_spec_names_have_their_documented_defaults(key, expected):
    assert flatten(load_settings(environ={}))[key] == expected


def test_an_empty_environment_gives_the_built_in_defaults():
    assert load_settings(environ={}) == Settings()


def test_every_key_is_reachable_through_its_environment_variable():
    defaults = flatten(Settings())
    environ = {"BURNBOX_" + key.upper().replace(".", "__"): _env_text(value)
               for key, value in defaults.items()}
    assert flatten(load_settings(environ=environ)) == defaults


def test_file_overrides_defaults_env_overrides_file_and_overrides_win(tmp_path):
    path = _write(tmp_path, """
[defaults]
max_sessions_per_user = 7
[smtp]
port = 2600
[http]
port = 9000
""")
    environ = {"BURNBOX_CONFIG": path, "BURNBOX_SMTP__PORT": "2700", "BURNBOX_HTTP__PORT": "9100"}
    settings = load_settings(environ=environ, overrides={"http.port": 9200})
    assert settings.defaults.max_sessions_per_user == 7  # file over default
    assert settings.smtp.port == 2700  # environment over file
    assert settings.http.port == 9200  # override over environment
    assert settings.metrics.path == "/metrics"  # untouched keys keep their default


def test_environment_values_are_typed(tmp_path):
    settings = load_settings(environ={
        "BURNBOX_METRICS__ENABLED": "yes",
        "BURNBOX_DEFAULTS__WEBHOOK_TIMEOUT": "1m30s",
        "BURNBOX_HTTP__TRUSTED_PROXIES": "10.0.0.0/8, 192.168.1.1",
        "BURNBOX_DATA_DIR": str(tmp_path),
    })
    assert settings.metrics.enabled is True
    assert settings.defaults.webhook_timeout == timedelta(seconds=90)
    assert settings.http.trusted_proxies == ("10.0.0.0/8", "192.168.1.1")
    assert settings.data_dir == str(tmp_path)


def test_platform_aliases_are_read_below_their_burnbox_forms():
    aliases = {"DATABASE_URL": "postgresql://u@db/app", "REDIS_URL": "redis://cache:6379/0",
               "PORT": "5000"}
    settings = load_settings(environ=aliases)
    assert settings.redis.url == "redis://cache:6379/0"
    assert settings.http.port == 5000
    assert settings.database_url == "postgresql+psycopg://u@db/app"
    assert not settings.embedded

    both = load_settings(environ={**aliases, "BURNBOX_HTTP__PORT": "6000"})
    assert both.http.port == 6000


def test_an_alias_beats_the_config_file(tmp_path):
    path = _write(tmp_path, "[http]\nport = 9000\n")
    assert load_settings(environ={"BURNBOX_CONFIG": path, "PORT": "5000"}).http.port == 5000


@pytest.mark.parametrize(("url", "effective"), [
    ("postgres://u:p@db:5432/app", "postgresql+psycopg://u:p@db:5432/app"),
    ("postgresql://u@db/app", "postgresql+psycopg://u@db/app"),
    ("postgresql+psycopg://u@db/app", "postgresql+psycopg://u@db/app"),
    ("sqlite:////var/lib/burnbox.db", "sqlite:////var/lib/burnbox.db"),
])
def test_database_urls_use_the_psycopg_3_driver(url, effective):
    assert load_settings(environ={"DATABASE_URL": url}).database_url == effective


def test_no_database_url_means_sqlite_inside_the_data_dir(tmp_path):
    settings = load_settings(environ={"BURNBOX_DATA_DIR": str(tmp_path)})
    assert settings.embedded
    assert settings.database_url == f"sqlite:///{tmp_path.resolve() / 'burnbox.db'}"
    assert settings.storage_path == (tmp_path / "objects").resolve()


@pytest.mark.parametrize(("name", "value", "key"), [
    ("BURNBOX_HTTP__PORT", "eighty", "http.port"),
    ("BURNBOX_HTTP__PORT", "80.5", "http.port"),
    ("BURNBOX_HTTP__PORT", "-1", "http.port"),
    ("PORT", "web", "http.port"),
    ("BURNBOX_METRICS__ENABLED", "maybe", "metrics.enabled"),
    ("BURNBOX_AUTH__ACCESS_TOKEN_TTL", "15", "auth.access_token_ttl"),
    ("BURNBOX_AUTH__ACCESS_TOKEN_TTL", "15 minutes", "auth.access_token_ttl"),
    ("BURNBOX_AUTH__ACCESS_TOKEN_TTL", "-15m", "auth.access_token_ttl"),
    ("BURNBOX_LOG__LEVEL", "LOUD", "log.level"),
    ("BURNBOX_ENV", "staging", "env"),
    ("BURNBOX_DEFAULTS__MAX_SESSION_PER_USER", "5", "defaults.max_session_per_user"),
    ("BURNBOX_NOSUCH__KEY", "1", "nosuch.key"),
])
def test_a_malformed_or_unknown_environment_value_names_its_key(name, value, key):
    with pytest.raises(SettingsError, match=key.replace(".", r"\.")):
        load_settings(environ={name: value})


@pytest.mark.parametrize(("text", "key"), [
    ("[http]\nport = \"eighty\"\n", "http.port"),
    ("[http]\nport = 80.0\n", "http.port"),
    ("[http]\nport = true\n", "http.port"),
    ("[metrics]\nenabled = \"maybe\"\n", "metrics.enabled"),
    ("[metrics]\npath = 5\n", "metrics.path"),
    ("[defaults]\nwebhook_timeout = 10\n", "defaults.webhook_timeout"),
    ("[http]\ntrusted_proxies = [1, 2]\n", "http.trusted_proxies"),
    ("[auth]\ncookie_samesite = \"lax\"\n", "auth.cookie_samesite"),
    ("[http]\nprot = 8080\n", "http.prot"),
    ("[nosuch]\nkey = 1\n", "nosuch.key"),
    ("database = \"sqlite://\"\n", "database"),
])
def test_a_malformed_or_unknown_file_value_names_its_key(tmp_path, text, key):
    path = _write(tmp_path, text)
    with pytest.raises(SettingsError, match=key.replace(".", r"\.")):
        load_settings(environ={"BURNBOX_CONFIG": path})


@pytest.mark.parametrize("name", ["BURNBOX_URL", "BURNBOX_API", "BURNBOX_API_KEY",
                                  "BURNBOX_SMTP", "BURNBOX_DOMAIN"])
def test_a_variable_documented_for_clients_is_not_read_as_a_setting(name):
    # The README's `. ./burnbox.env` exports these beside the server's own settings.
    assert load_settings(environ={name: "http://127.0.0.1:8080/api/v1"}) == load_settings(
        environ={})


def test_a_misspelt_setting_beside_the_client_variables_still_stops_start_up():
    with pytest.raises(SettingsError, match=r"unknown setting smpt\.port \(from the environment "
                                            r"variable BURNBOX_SMPT__PORT\)"):
        load_settings(environ={"BURNBOX_API": "http://127.0.0.1:8080/api/v1",
                               "BURNBOX_SMPT__PORT": "2525"})


def test_a_bad_value_says_whether_it_came_from_the_environment_or_the_file(tmp_path):
    path = _write(tmp_path, "[http]\nport = \"eighty\"\n")
    with pytest.raises(SettingsError, match=f"http\\.port: 'eighty' is not an integer "
                                            f"\\(from the file {re.escape(path)}\\)"):
        load_settings(environ={"BURNBOX_CONFIG": path})
    with pytest.raises(SettingsError, match=r"http\.port: 'ninety' is not an integer \(from the "
                                            r"environment variable BURNBOX_HTTP__PORT\)"):
        load_settings(environ={"BURNBOX_CONFIG": path, "BURNBOX_HTTP__PORT": "ninety"})


def test_a_missing_or_broken_config_file_is_refused(tmp_path):
    with pytest.raises(SettingsError, match="does not exist"):
        load_settings(environ={"BURNBOX_CONFIG": str(tmp_path / "absent.toml")})
    with pytest.raises(SettingsError, match="not valid TOML"):
        load_settings(environ={"BURNBOX_CONFIG": _write(tmp_path, "[http\nport = 1")})


def test_an_unknown_override_is_refused():
    with pytest.raises(SettingsError, match=r"http\.prot"):
        load_settings(environ={}, overrides={"http.prot": 1})


def test_replace_returns_a_typed_copy_and_leaves_the_original_alone():
    original = load_settings(environ={})
    changed = original.replace(**{"metrics.enabled": "true", "clock.tick": "1s"})
    assert changed.metrics.enabled is True
    assert changed.clock.tick == timedelta(seconds=1)
    assert original.metrics.enabled is False
    with pytest.raises(SettingsError, match=r"clock\.tick"):
        original.replace(**{"clock.tick": "soon"})


@pytest.mark.parametrize("secret", [
    "   ", "changeme", "  ChangeMe ", "secret", "your-secret-key", "burnbox",
    "please-change-this-secret-before-going-live",  # long, but a placeholder
    "x" * 31,  # too short
])
def test_production_refuses_a_blank_placeholder_or_short_jwt_secret(secret):
    environ = {"BURNBOX_ENV": "production", "BURNBOX_AUTH__JWT_SECRET": secret}
    with pytest.raises(SettingsError, match=r"auth\.jwt_secret"):
        load_settings(environ=environ)


def test_production_accepts_a_long_random_jwt_secret():
    environ = {"BURNBOX_ENV": "production", "BURNBOX_AUTH__JWT_SECRET": GOOD_SECRET}
    assert load_settings(environ=environ).auth.jwt_secret == GOOD_SECRET


def test_development_starts_without_a_jwt_secret():
    assert load_settings(environ={}).auth.jwt_secret == ""


def test_the_committed_example_is_exactly_the_rendered_example():
    assert EXAMPLE.read_text(encoding="utf-8") == render_example(), (
        "regenerate it: python -c 'from burnbox.settings import render_example; "
        "print(render_example(), end=\"\")' > burnbox.example.toml"
    )


def test_the_example_names_every_key_with_its_default_and_nothing_else():
    data = tomllib.loads(EXAMPLE.read_text(encoding="utf-8"))
    in_example = {}
    for name, value in data.items():
        if isinstance(value, dict):
            in_example.update({f"{name}.{sub}": sub_value for sub, sub_value in value.items()})
        else:
            in_example[name] = value
    assert set(in_example) == set(keys())
    defaults = flatten(Settings())
    example_settings = flatten(load_settings(environ={}, overrides=in_example))
    assert example_settings == defaults


def test_loading_the_example_file_gives_the_default_settings():
    assert load_settings(environ={"BURNBOX_CONFIG": str(EXAMPLE)}) == Settings()


def test_the_example_never_signs_with_a_secret_anyone_has_read(tmp_path):
    # Its secret is empty: generated per deployment on SQLite, required on PostgreSQL.
    environ = {"BURNBOX_CONFIG": str(EXAMPLE), "BURNBOX_ENV": "production",
               "BURNBOX_DATA_DIR": str(tmp_path)}
    assert load_settings(environ=environ).auth.jwt_secret == ""
    scaled = load_settings(environ={**environ, "DATABASE_URL": "postgresql://db.invalid/b"})
    with pytest.raises(SettingsError, match=r"auth\.jwt_secret"):
        resolve_jwt_secret(scaled)


def test_the_default_trusts_one_local_domain_that_can_never_be_real():
    assert load_settings(environ={}).domains.trusted == ("burnbox.test",)


def test_trusted_domains_come_from_the_environment_and_an_empty_value_trusts_none():
    environ = {"BURNBOX_DOMAINS__TRUSTED": "qa.test, mail.corp.example"}
    assert load_settings(environ=environ).domains.trusted == ("qa.test", "mail.corp.example")
    assert load_settings(environ={"BURNBOX_DOMAINS__TRUSTED": ""}).domains.trusted == ()


@pytest.mark.parametrize("name", ["localhost", "bad name.test", "-x.test", "a..test"])
def test_a_trusted_entry_that_is_not_a_domain_name_stops_start_up(name):
    with pytest.raises(SettingsError, match=r"domains\.trusted"):
        load_settings(environ={"BURNBOX_DOMAINS__TRUSTED": name})


@pytest.mark.parametrize("zone", ["Mars/Olympus", "utc ", ""])
def test_a_default_timezone_that_is_not_an_iana_name_stops_start_up(zone):
    with pytest.raises(SettingsError, match=r"defaults\.timezone"):
        load_settings(environ={"BURNBOX_DEFAULTS__TIMEZONE": zone})
    assert load_settings(environ={"BURNBOX_DEFAULTS__TIMEZONE": "Asia/Tokyo"}) \
        .defaults.timezone == "Asia/Tokyo"


def test_bootstrap_is_off_by_default_and_names_the_trusted_local_domain_implicitly():
    bootstrap = load_settings(environ={}).bootstrap
    assert bootstrap.enabled is False
    assert (bootstrap.admin_email, bootstrap.domain, bootstrap.api_key) == (
        "admin@burnbox.test", "", "")


def test_the_public_address_follows_the_port_unless_it_is_set():
    # A public_url fixed at :8080 sent invite links and the bootstrap guide to a port nothing
    # listened on once http.port was changed.
    moved = load_settings(environ={"BURNBOX_HTTP__PORT": "9000"})
    assert moved.http.url == "http://127.0.0.1:9000"
    everywhere = load_settings(environ={"BURNBOX_HTTP__HOST": "0.0.0.0", "PORT": "9001"})
    assert everywhere.http.url == "http://127.0.0.1:9001"
    public = load_settings(environ={"BURNBOX_HTTP__PUBLIC_URL": "https://mail.example.test/"})
    assert public.http.url == "https://mail.example.test"


def test_encryption_keys_come_from_the_environment_and_a_malformed_one_stops_start_up():
    from burnbox.secretbox import SecretBox, new_key

    first, second = new_key(), new_key()
    settings = load_settings({"BURNBOX_SECRETS__ENCRYPTION_KEYS": f"{first},{second}"})
    assert settings.secrets.encryption_keys == (first, second)
    assert SecretBox.from_settings(settings).can_seal
    assert not SecretBox.from_settings(load_settings({})).can_seal
    with pytest.raises(SettingsError, match=r"secrets\.encryption_keys: key 2 is not a Fernet"):
        load_settings({"BURNBOX_SECRETS__ENCRYPTION_KEYS": f"{first},0123456789abcdef"})
