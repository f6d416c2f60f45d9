"""The one settings object: built-in defaults < optional TOML file < environment variables.

Every process builds it once with `load_settings()` at start-up and passes it into the factories
(`create_app`, `setup_broker`, the SMTP server). Importing this module reads nothing.

Key names are dotted (`defaults.max_sessions_per_user`). The environment form is `BURNBOX_` plus the
upper-cased key with `__` between section and key (`BURNBOX_DEFAULTS__MAX_SESSIONS_PER_USER`);
`DATABASE_URL`, `REDIS_URL` and `PORT` are also read, below their `BURNBOX_` forms. The config file
path comes from `BURNBOX_CONFIG`. A malformed value or an unknown key fails with the key's name
and where it came from (the variable or the file). The variables documented for clients
(`CLIENT_ENV`: `BURNBOX_API`, `BURNBOX_API_KEY`...) are not settings and are never read here.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import os
import re
import tomllib
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from burnbox.durations import DurationError, format_duration, parse_duration

ENV_PREFIX = "BURNBOX_"
CONFIG_ENV = "BURNBOX_CONFIG"
# Environment names that start with the prefix but are not settings keys.
RESERVED_ENV = ("BURNBOX_CONFIG", "BURNBOX_TEST_")
# The variables the README, `burnbox bootstrap` and the Python client's pytest plugin tell a
# *client* to export. They share the prefix, and reading them as settings made every server
# command fail ("unknown setting api") right after the README's `. ./burnbox.env`; they are
# never settings, whatever value they hold.
CLIENT_ENV = frozenset({"BURNBOX_URL", "BURNBOX_API", "BURNBOX_API_KEY", "BURNBOX_SMTP",
                        "BURNBOX_DOMAIN"})
ALIASES = {"DATABASE_URL": "database.url", "REDIS_URL": "redis.url", "PORT": "http.port"}

# JWT secrets that appear in examples and tutorials; a production start refuses them, since
# anyone who has read the example could mint an administrator's tokens with them.
PLACEHOLDER_SECRETS = frozenset(
    {"", "changeme", "change-me", "secret", "your-secret-key", "jwt-secret", "please-change-me",
     "replace-me", "development", "dev", "test", "burnbox"}
)
MIN_SECRET_LENGTH = 32
# A domain name of two labels or more (letters, digits, inner hyphens); the domains context
# applies the full rules when it compares names.
TRUSTED_NAME = re.compile(r"(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+"
                          r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?")


class SettingsError(ValueError):
    """A settings value is malformed, unknown, or unsafe; the message names the key."""


def setting(default: Any, help: str, choices: tuple[str, ...] = ()) -> Any:
    """Declare one settings key with its default, a one-line description and allowed values."""
    if isinstance(default, (list, tuple)):
        return field(default_factory=lambda: tuple(default), metadata={"help": help})
    return field(default=default, metadata={"help": help, "choices": choices})


@dataclass(frozen=True)
class DatabaseSettings:
    url: str = setting("", "SQLAlchemy URL; empty means SQLite in data_dir (embedded mode)")
    pool_size: int = setting(10, "connections kept per process (PostgreSQL)")
    echo: bool = setting(False, "log every SQL statement")


@dataclass(frozen=True)
class RedisSettings:
    url: str = setting("", "Redis URL; empty means the in-process broker, bus and store")


@dataclass(frozen=True)
class HttpSettings:
    host: str = setting("127.0.0.1", "address the web server binds")
    port: int = setting(8080, "port the web server binds (PORT also works)")
    public_url: str = setting(
        "", "address users reach the service at; empty: http://<host>:<port>, so a changed port "
        "reaches the links Burnbox writes (invites, resets, the bootstrap guide)")
    max_request_bytes: int = setting(1_048_576, "largest request body accepted (413 above)")
    trusted_proxies: tuple[str, ...] = setting(
        (), "proxy addresses/CIDRs whose X-Forwarded-For is believed; empty trusts none"
    )
    allowed_origins: tuple[str, ...] = setting(
        (), "browser origins allowed for WebSockets and CORS; empty allows same origin only"
    )

    @property
    def bind(self) -> str:
        """`host:port` as servers take it (an IPv6 host in brackets)."""
        return f"{_bracketed(self.host)}:{self.port}"

    @property
    def local_url(self) -> str:
        """The URL a client on this machine reaches the server at: the bound address, or
        loopback when the server binds every address."""
        host = {"": "127.0.0.1", "0.0.0.0": "127.0.0.1", "::": "::1"}.get(self.host, self.host)  # noqa: S104
        return f"http://{_bracketed(host)}:{self.port}"

    @property
    def url(self) -> str:
        """The address users reach the service at, without a trailing slash: `public_url`, or
        `local_url` when it is not set."""
        return self.public_url.rstrip("/") or self.local_url


@dataclass(frozen=True)
class AuthSettings:
    jwt_secret: str = setting(
        "", "HS256 signing key (32+ characters in production); empty: generated once into "
        "data_dir/jwt_secret on SQLite, refused on any other database"
    )
    access_token_ttl: timedelta = setting(timedelta(minutes=15), "access token lifetime")
    refresh_token_ttl: timedelta = setting(timedelta(days=30), "refresh token (session) lifetime")
    pending_login_ttl: timedelta = setting(timedelta(minutes=5), "pending login token life")
    refresh_reuse_grace: timedelta = setting(
        timedelta(seconds=20), "how long the refresh token a session just rotated away still "
        "refreshes instead of counting as reuse (a reload that aborted the refresh); 0: never"
    )
    cookie_samesite: str = setting(
        "Lax", "SameSite of the refresh cookie", ("Lax", "Strict", "None")
    )
    cookie_secure: str = setting(
        "auto", "Secure flag of the refresh cookie; auto: on when the request or http.public_url "
        "is https", ("auto", "true", "false"),
    )
    argon2_time_cost: int = setting(3, "argon2id passes per password hash")
    argon2_memory_kib: int = setting(65_536, "argon2id memory per password hash, in KiB")
    argon2_parallelism: int = setting(4, "argon2id lanes per password hash")
    lockout_threshold: int = setting(
        10, "failed password checks on one e-mail within lockout_window that lock it (0: never)"
    )
    lockout_window: timedelta = setting(timedelta(minutes=15), "window failures are counted in")
    lockout_duration: timedelta = setting(
        timedelta(minutes=15), "how long a locked e-mail refuses password checks"
    )
    email_verification_ttl: timedelta = setting(
        timedelta(hours=48), "lifetime of an e-mail verification link"
    )
    require_email_verification: bool = setting(
        False, "refuse password sign-ins of accounts whose address is not verified"
    )
    password_reset_ttl: timedelta = setting(timedelta(hours=1), "lifetime of a password reset link")


@dataclass(frozen=True)
class DefaultsSettings:
    max_sessions_per_user: int = setting(5, "active sessions a user may hold (0: no limit)")
    registration_enabled: bool = setting(True, "anyone may create an account")
    password_min_length: int = setting(8, "shortest password accepted")
    password_max_length: int = setting(128, "longest password accepted")
    password_require_uppercase: bool = setting(False, "passwords need an upper-case letter")
    password_require_lowercase: bool = setting(False, "passwords need a lower-case letter")
    password_require_digit: bool = setting(False, "passwords need a digit")
    password_require_symbol: bool = setting(False, "passwords need a character that is not a "
                                            "letter or digit")
    webhook_max_retries: int = setting(3, "delivery attempts per webhook event")
    webhook_timeout: timedelta = setting(timedelta(seconds=10), "timeout of one delivery attempt")
    inbox_ttl: timedelta = setting(timedelta(minutes=10), "inbox lifetime when none is asked for")
    inbox_max_ttl: timedelta = setting(timedelta(hours=24), "longest inbox lifetime")
    max_domains: int = setting(0, "domains an org may register (0: no limit); orgs may lower it")
    max_teams: int = setting(0, "teams an org may have (0: no limit); orgs may lower it")
    max_inboxes_per_domain: int = setting(
        0, "active inboxes per domain (0: no limit); orgs, domains and teams may lower it"
    )
    attachments_enabled: bool = setting(
        True, "keep the attachments of received mail (off: stored without them)"
    )
    max_attachment_size_mb: int = setting(
        25, "largest attachment kept, in MiB (0: none kept); larger ones are left out"
    )
    timezone: str = setting("UTC", "IANA time zone of accounts that chose none")
    date_format: str = setting("YYYY-MM-DD", "date format of accounts that chose none",
                               ("YYYY-MM-DD", "DD/MM/YYYY", "MM/DD/YYYY", "DD.MM.YYYY"))
    time_format: str = setting("24h", "time format of accounts that chose none", ("24h", "12h"))


@dataclass(frozen=True)
class InviteSettings:
    ttl: timedelta = setting(timedelta(hours=48), "how long an org invitation can be accepted")


@dataclass(frozen=True)
class MetricsSettings:
    enabled: bool = setting(False, "serve Prometheus metrics (loopback and private sources only)")
    path: str = setting("/metrics", "path of the metrics endpoint")
    host: str = setting(
        "127.0.0.1", "address the metrics listeners of mailin, worker and clock bind (they "
        "answer loopback and private sources only)"
    )


@dataclass(frozen=True)
class SmtpSettings:
    hostname: str = setting("localhost", "SMTP greeting name, and the MX domains must point at")
    host: str = setting("127.0.0.1", "address the SMTP server binds")
    port: int = setting(2525, "port the SMTP server binds")
    metrics_port: int = setting(
        9125, "port of `burnbox mailin`'s metrics listener when metrics.enabled (0: none)"
    )
    max_message_bytes: int = setting(26_214_400, "largest message accepted (SIZE)")
    max_recipients: int = setting(100, "recipients accepted per message")
    max_connections: int = setting(500, "concurrent SMTP connections per process")
    timeout: timedelta = setting(timedelta(minutes=5), "idle timeout of an SMTP connection")
    connection_timeout: timedelta = setting(
        timedelta(minutes=30), "longest life of one SMTP connection, busy or not (421 after)"
    )
    tls_cert: str = setting("", "PEM certificate path; enables STARTTLS with tls_key")
    tls_key: str = setting("", "PEM private key path")
    auth_without_tls: str = setting(
        "auto", "offer AUTH (capture credentials) on a connection without STARTTLS: auto is "
        "true only in the embedded mode (no Redis) with smtp.host a loopback address",
        ("auto", "true", "false")
    )
    auth_failures_per_minute: int = setting(
        10, "failed AUTH attempts per client IP and minute; beyond, AUTH is answered 454 "
        "and the connection closed"
    )
    processes: int = setting(
        0, "SMTP processes `burnbox mailin` runs on the one port (one core each at most, plus "
        "its store process); 0: one per core with Redis configured (the scaled mode), else 1"
    )
    store_threads: int = setting(
        8, "threads per SMTP process for recipient look-ups that miss the cache and parsing "
        "messages over 256 KiB"
    )
    commit_batch_size: int = setting(
        64, "messages stored per transaction at most (group commit: what arrives while the "
        "previous commit runs goes into the next)"
    )
    route_cache_ttl: timedelta = setting(
        timedelta(seconds=30), "how long a known inbox address is remembered (expiry is "
        "checked on every use)"
    )
    route_cache_negative_ttl: timedelta = setting(
        timedelta(seconds=2), "how long an unknown address is remembered (0s: never)"
    )
    route_cache_size: int = setting(10_000, "addresses remembered per SMTP process")


@dataclass(frozen=True)
class StorageSettings:
    backend: str = setting(
        "fs", "where attachments and raw messages live: fs (a folder) or s3 (a bucket)",
        ("fs", "s3"),
    )
    path: str = setting("", "root folder of the fs backend; empty means data_dir/objects")
    s3_endpoint_url: str = setting(
        "", "S3 API address (MinIO, Ceph, R2...); empty means AWS in s3_region"
    )
    s3_bucket: str = setting("", "bucket of the s3 backend (must exist; Burnbox never creates it)")
    s3_region: str = setting("us-east-1", "region of the bucket, used for request signing")
    s3_access_key: str = setting("", "access key id; empty uses the standard AWS credential chain")
    s3_secret_key: str = setting("", "secret access key (with s3_access_key)")
    s3_prefix: str = setting("", "folder inside the bucket every key is put under, e.g. burnbox/")
    signed_url_ttl: timedelta = setting(
        timedelta(minutes=5), "life of the download links the API redirects to on the s3 "
        "backend (attachments, raw messages)"
    )
    s3_addressing_style: str = setting(
        "auto", "bucket in the host name (virtual) or in the path (path; most self-hosted servers)",
        ("auto", "path", "virtual"),
    )
    config_refresh: timedelta = setting(
        timedelta(seconds=5), "how often each process looks for a storage configuration "
        "changed through the API (PUT /admin/config/storage)"
    )


@dataclass(frozen=True)
class WebhookSettings:
    allow_private_targets: bool = setting(
        False, "let webhooks and the link check reach loopback/private addresses (tests and local "
        "demos only)"
    )
    backoff_scale: float = setting(
        1.0, "multiplies the 0s/5s/25s waits before delivery attempts (tests shrink them)"
    )
    lease_grace: timedelta = setting(
        timedelta(seconds=30), "time beyond defaults.webhook_timeout after which an attempt "
        "whose worker died is made again"
    )
    sweep_page: int = setting(
        1000, "stalled deliveries one message of the delivery sweep takes (at least 1); a full "
        "page sends the next page's message at once, so a backlog of any size goes out at the "
        "workers' pace"
    )
    ca_file: str = setting(
        "", "PEM file of the CAs trusted for https targets; empty uses the system store"
    )


@dataclass(frozen=True)
class WebSocketSettings:
    ticket_ttl: timedelta = setting(timedelta(seconds=30), "lifetime of a single-use ticket")
    max_per_user: int = setting(
        5, "open WebSockets a user may hold across web processes (0: no limit)"
    )
    ping_interval: timedelta = setting(
        timedelta(seconds=25), "how often the server pings each socket (a silent one is closed)"
    )


@dataclass(frozen=True)
class WaitSettings:
    max_timeout: timedelta = setting(
        timedelta(minutes=5), "longest `timeout` a request waiting for e-mail may ask for"
    )


@dataclass(frozen=True)
class McpSettings:
    host: str = setting("127.0.0.1", "address the MCP server's Streamable HTTP transport binds "
                        "(`burnbox mcp-http`, and the one in `burnbox serve`)")
    port: int = setting(8081, "port of the MCP Streamable HTTP transport, at /mcp; 0 leaves it "
                        "out of `burnbox serve`")
    api_url: str = setting("", "the REST API the MCP HTTP transport calls with each caller's "
                           "key; empty: the web server on this machine (http.host, http.port)")
    allowed_hosts: tuple[str, ...] = setting(
        (), "Host header values the MCP HTTP transport accepts besides loopback (DNS-rebinding "
        "guard), such as mcp.example.com or mcp.example.com:*")
    allowed_origins: tuple[str, ...] = setting(
        (), "browser Origin values the MCP HTTP transport accepts besides loopback, such as "
        "https://mcp.example.com")
    max_body_chars: int = setting(20_000, "most characters of an e-mail body one MCP tool "
                                  "result holds (the rest is read with text_offset)")


@dataclass(frozen=True)
class DnsSettings:
    nameservers: tuple[str, ...] = setting(
        (), "host[:port] resolvers for domain verification, webhook targets and the "
        "authentication results of received mail; empty uses the system resolver"
    )
    timeout: timedelta = setting(
        timedelta(seconds=5), "time one look-up (domain verification, mail authentication) may "
        "take before it counts as failed"
    )


@dataclass(frozen=True)
class ChecksSettings:
    spam_engine: str = setting(
        "", "a spam engine the worker asks about every new e-mail after it is stored: "
        "spamd://host:783 (SpamAssassin) or rspamd+http://host:11333 (rspamd); empty asks none. "
        "Set by the operator only, and reached wherever it is, private addresses included"
    )
    spam_engine_timeout: timedelta = setting(
        timedelta(seconds=10), "how long one message's check may take, connection included"
    )
    spam_engine_max_bytes: int = setting(
        512_000, "largest message sent to the spam engine; a larger one is recorded as "
        "skipped (spamc's own limit is 500 KB)"
    )


@dataclass(frozen=True)
class DomainSettings:
    trusted: tuple[str, ...] = setting(
        ("burnbox.test",), "domain names verified by the operator, without DNS (only a system "
        "administrator may register one); empty trusts none"
    )


@dataclass(frozen=True)
class BootstrapSettings:
    enabled: bool = setting(
        False, "`burnbox serve` and `burnbox release` run `burnbox bootstrap` on start"
    )
    admin_email: str = setting("admin@burnbox.test", "the first system administrator's e-mail")
    admin_password: str = setting(
        "", "their password; empty: a random one, printed once when the admin is made"
    )
    org: str = setting("Burnbox", "name of the first org")
    team: str = setting("Default", "name of the first team")
    domain: str = setting(
        "", "domain of the first team; empty: the first name of domains.trusted"
    )
    api_key: str = setting(
        "", "a team API key (bb_ + 64 hex) to store for the first team; empty: one is made and "
        "printed once"
    )


@dataclass(frozen=True)
class DemoSettings:
    enabled: bool = setting(False, "serve the public try-it endpoints")
    assignment_id: str = setting("", "domain assignment the demo inboxes are created in")
    ttl: timedelta = setting(timedelta(minutes=10), "lifetime of a demo inbox")


@dataclass(frozen=True)
class MailerSettings:
    host: str = setting("", "SMTP relay for outgoing mail; empty writes messages to the log")
    port: int = setting(587, "SMTP relay port")
    username: str = setting("", "SMTP relay user")
    password: str = setting("", "SMTP relay password")
    starttls: bool = setting(True, "use STARTTLS with the relay")
    from_address: str = setting("Burnbox <no-reply@localhost>", "From of outgoing mail")


@dataclass(frozen=True)
class ReleaseSettings:
    relay: str = setting(
        "off", "where released e-mails are sent: nowhere, so every release is refused (off), "
        "the release.relay_* server (own), or the platform mailer in force (mailer)",
        ("off", "own", "mailer"))
    relay_host: str = setting("", "SMTP relay of released e-mails when release.relay is own")
    relay_port: int = setting(587, "its port")
    relay_tls: str = setting("starttls", "how to reach it: STARTTLS after connecting, TLS from "
                             "the first byte, or no TLS (a relay on the host itself, tests)",
                             ("starttls", "tls", "none"))
    relay_username: str = setting("", "its user (empty: no login)")
    relay_password: str = setting("", "its password (never shown by the API or the logs)")
    from_address: str = setting(
        "", "envelope sender and Resent-From of released e-mails (bounces go there); empty: "
        "the address of mailer.from_address")
    allowed_recipients: tuple[str, ...] = setting(
        (), "recipient patterns a release may ever reach (`*@company.example`, "
        "`qa@company.example`, `*@*.company.example`); orgs and teams can only narrow them; "
        "empty: every release is refused")
    rate_limit: str = setting(
        "50/hour", "recipients one team may release to in a window (each recipient counts one)")
    retry_delay: timedelta = setting(
        timedelta(seconds=30), "wait before the second attempt of a release the relay refused "
        "for now (4xx, no connection); each later wait is four times longer")


@dataclass(frozen=True)
class SecretsSettings:
    encryption_keys: tuple[str, ...] = setting(
        (), "Fernet keys (`burnbox secrets-key` makes one) sealing the secrets stored in the "
        "database (mailer password, storage secret key, SSO client secrets); the first seals, "
        "every one opens, so a new key goes first and the old one stays until secrets are "
        "saved again; empty: storing a secret through the API is refused"
    )


@dataclass(frozen=True)
class SsoSettings:
    allow_private_issuers: bool = setting(
        False, "let single sign-on reach OpenID providers on loopback/private addresses (an "
        "identity server on the internal network, tests); off: only public addresses"
    )
    enforce_sso: bool = setting(
        False, "refuse password sign-in to users whose e-mail domain an SSO domain mapping "
        "covers (orgs can also enforce it for the domains mapped into them)"
    )
    enforce_sso_for_system_admins: bool = setting(
        False, "apply enforce_sso to system administrators too (off: they keep their password, "
        "a way in when the identity provider is down)"
    )


@dataclass(frozen=True)
class WorkerSettings:
    metrics_port: int = setting(
        9126, "port of `burnbox worker`'s metrics listener when metrics.enabled (0: none)"
    )
    threads: int = setting(
        8, "threads per worker process (and in the embedded mode) for every queue but webhook "
        "delivery and mail authentication: event fan-out, mail, DNS, the clock's jobs"
    )
    delivery_threads: int = setting(
        32, "threads per worker process (and in the embedded mode) for webhook delivery alone: "
        "attempts wait on the receivers, so this pool is sized for waiting, not for cores"
    )
    authentication_threads: int = setting(
        8, "threads per worker process (and in the embedded mode) for the authentication "
        "results of new mail alone: their DNS look-ups wait on other servers, so they never "
        "hold the event fan-out or the clock's sweeps"
    )


@dataclass(frozen=True)
class ClockSettings:
    metrics_port: int = setting(
        9127, "port of `burnbox clock`'s metrics listener when metrics.enabled (0: none)"
    )
    tick: timedelta = setting(timedelta(seconds=10), "how often the clock looks for due jobs")
    cleanup_interval: timedelta = setting(timedelta(minutes=1), "cleanup worker period")
    cleanup_batch_size: int = setting(
        500, "inboxes the cleanup removes per transaction (bounds its memory and lock time)"
    )
    api_key_usage_interval: timedelta = setting(
        timedelta(seconds=10), "how often API-key usage counted in the key-value store is "
        "written to the keys (request_count, last_used_at, last_used_ip)"
    )
    analytics_rollup_interval: timedelta = setting(
        timedelta(hours=1), "how often the closed days of the analytics counters are rolled up "
        "(the figures are exact either way; rolled-up days are faster to read)"
    )
    webhook_retry_interval: timedelta = setting(timedelta(minutes=5), "webhook_retry period")
    webhook_sweep_interval: timedelta = setting(
        timedelta(seconds=30), "how often deliveries whose message or worker was lost are resent"
    )
    admin_stats_interval: timedelta = setting(
        timedelta(seconds=10), "admin.stats period while a system admin is connected"
    )
    dns_recheck_interval: timedelta = setting(
        timedelta(hours=1), "how often every domain's DNS records are checked again"
    )
    outbox_grace: timedelta = setting(
        timedelta(seconds=30), "age after which an undispatched event is enqueued again"
    )


@dataclass(frozen=True)
class AuditSettings:
    retention: timedelta = setting(
        timedelta(0), "how long audit entries are kept; the cleanup removes older ones in "
        "batches of clock.cleanup_batch_size (0: keep them forever)"
    )
    export_ttl: timedelta = setting(
        timedelta(hours=24), "how long the file of an audit export job can be downloaded; the "
        "cleanup then deletes it"
    )


@dataclass(frozen=True)
class RateLimitSettings:
    enabled: bool = setting(True, "apply rate limits and send the X-RateLimit-* headers")
    authenticated: str = setting("300/minute", "per user or API key")
    anonymous: str = setting("60/minute", "per client IP without credentials")
    auth: str = setting("10/minute", "per client IP on login, register, reset-password and setup")
    refresh: str = setting("120/minute", "per client IP on token refresh (each UI page load)")
    forgot_password: str = setting("3/hour", "per client IP on forgot-password")
    demo: str = setting("60/minute", "per client IP on the public try-it endpoints")


@dataclass(frozen=True)
class LogSettings:
    level: str = setting("INFO", "log level", ("DEBUG", "INFO", "WARNING", "ERROR"))
    format: str = setting("auto", "log line format: text on a terminal, else JSON (auto), or "
                          "always one of them", ("auto", "json", "text"))
    access: str = setting("auto", "one line per HTTP request at INFO: on with JSON lines, off "
                          "(at DEBUG) on a person's terminal (auto), or always on or off",
                          ("auto", "on", "off"))


@dataclass(frozen=True)
class Settings:
    env: str = setting("development", "production refuses unsafe settings",
                       ("development", "production", "test"))
    data_dir: str = setting("./data", "folder of the embedded SQLite file and objects")
    database: DatabaseSettings = field(default_factory=DatabaseSettings)
    redis: RedisSettings = field(default_factory=RedisSettings)
    http: HttpSettings = field(default_factory=HttpSettings)
    auth: AuthSettings = field(default_factory=AuthSettings)
    defaults: DefaultsSettings = field(default_factory=DefaultsSettings)
    invites: InviteSettings = field(default_factory=InviteSettings)
    metrics: MetricsSettings = field(default_factory=MetricsSettings)
    smtp: SmtpSettings = field(default_factory=SmtpSettings)
    storage: StorageSettings = field(default_factory=StorageSettings)
    webhooks: WebhookSettings = field(default_factory=WebhookSettings)
    websockets: WebSocketSettings = field(default_factory=WebSocketSettings)
    wait: WaitSettings = field(default_factory=WaitSettings)
    mcp: McpSettings = field(default_factory=McpSettings)
    dns: DnsSettings = field(default_factory=DnsSettings)
    checks: ChecksSettings = field(default_factory=ChecksSettings)
    domains: DomainSettings = field(default_factory=DomainSettings)
    bootstrap: BootstrapSettings = field(default_factory=BootstrapSettings)
    demo: DemoSettings = field(default_factory=DemoSettings)
    mailer: MailerSettings = field(default_factory=MailerSettings)
    release: ReleaseSettings = field(default_factory=ReleaseSettings)
    secrets: SecretsSettings = field(default_factory=SecretsSettings)
    sso: SsoSettings = field(default_factory=SsoSettings)
    worker: WorkerSettings = field(default_factory=WorkerSettings)
    clock: ClockSettings = field(default_factory=ClockSettings)
    audit: AuditSettings = field(default_factory=AuditSettings)
    rate_limits: RateLimitSettings = field(default_factory=RateLimitSettings)
    log: LogSettings = field(default_factory=LogSettings)

    @property
    def database_url(self) -> str:
        """The effective database URL: the configured one, or SQLite inside data_dir."""
        if self.database.url:
            return normalise_database_url(self.database.url)
        return f"sqlite:///{Path(self.data_dir).resolve() / 'burnbox.db'}"

    @property
    def embedded(self) -> bool:
        """True when no Redis is configured: in-process broker, bus and key-value store."""
        return not self.redis.url

    @property
    def smtp_auth_without_tls(self) -> bool:
        """Whether SMTP AUTH is offered on a plain connection: `smtp.auth_without_tls`, where
        `auto` means the embedded mode bound to loopback (a laptop, where no one else can
        listen on the connection and no certificate is at hand)."""
        if self.smtp.auth_without_tls != "auto":
            return self.smtp.auth_without_tls == "true"
        host = self.smtp.host.strip("[]")
        try:
            loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
        except ValueError:
            loopback = False
        return self.embedded and loopback

    @property
    def storage_path(self) -> Path:
        """Root folder of the filesystem object storage."""
        return Path(self.storage.path or Path(self.data_dir) / "objects").resolve()

    def replace(self, **changes: Any) -> Settings:
        """Return a copy with dotted keys changed, e.g. replace(**{"redis.url": "redis://"})."""
        return _build({**flatten(self), **changes})


def _bracketed(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def normalise_database_url(url: str) -> str:
    """Make postgres:// and postgresql:// URLs use the psycopg 3 driver."""
    for prefix in ("postgres://", "postgresql://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix):]
    return url


def _sections(cls: type) -> dict[str, dataclasses.Field]:
    return {f.name: f for f in dataclasses.fields(cls)}


def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def keys() -> dict[str, tuple[Any, dataclasses.Field]]:
    """Every dotted key with its type and field, in declaration order."""
    found: dict[str, tuple[Any, dataclasses.Field]] = {}
    hints = _hints(Settings)
    for name, fld in _sections(Settings).items():
        kind = hints[name]
        if dataclasses.is_dataclass(kind):
            sub_hints = _hints(kind)
            for sub_name, sub_field in _sections(kind).items():
                found[f"{name}.{sub_name}"] = (sub_hints[sub_name], sub_field)
        else:
            found[name] = (kind, fld)
    return found


def flatten(settings: Settings) -> dict[str, Any]:
    """The settings as a flat mapping of dotted key to value."""
    flat: dict[str, Any] = {}
    for key in keys():
        value: Any = settings
        for part in key.split("."):
            value = getattr(value, part)
        flat[key] = value
    return flat


def _coerce(key: str, kind: Any, raw: Any, fld: dataclasses.Field) -> Any:
    """Turn a raw value (a string from the environment, or a TOML value) into the key's type."""
    try:
        if kind is bool:
            value = _to_bool(raw)
        elif kind is int:
            if isinstance(raw, bool) or not isinstance(raw, (int, str)):
                raise ValueError
            value = int(raw)
        elif kind is float:
            value = float(raw)
        elif kind is timedelta:
            value = raw if isinstance(raw, timedelta) else parse_duration(str(raw))
        elif kind == tuple[str, ...]:
            if isinstance(raw, str):
                value = tuple(part.strip() for part in raw.split(",") if part.strip())
            elif isinstance(raw, (list, tuple)) and all(isinstance(x, str) for x in raw):
                value = tuple(raw)
            else:
                raise ValueError
        else:
            if not isinstance(raw, str):
                raise ValueError
            value = raw
    except (ValueError, TypeError, DurationError) as exc:
        expected = {bool: "true or false", int: "an integer", float: "a number",
                    timedelta: "a duration such as '90m' or '24h'"}.get(kind, "a string")
        if kind == tuple[str, ...]:
            expected = "a comma-separated list"
        raise SettingsError(f"setting {key}: {raw!r} is not {expected}") from exc
    choices = fld.metadata.get("choices")
    if choices and value not in choices:
        raise SettingsError(f"setting {key}: {value!r} is not one of {', '.join(choices)}")
    if kind in (int, float) and value < 0:
        raise SettingsError(f"setting {key}: {value} must not be negative")
    return value


def _to_bool(raw: Any) -> bool:
    if isinstance(raw, bool):
        return raw
    text = str(raw).strip().lower()
    if text in {"1", "true", "yes", "on"}:
        return True
    if text in {"0", "false", "no", "off"}:
        return False
    raise ValueError(raw)


def _build(values: Mapping[str, Any], sources: Mapping[str, str] | None = None) -> Settings:
    """The settings of `values` (dotted keys) over the defaults; SettingsError naming the key
    and, from `sources` (key -> where its value came from), its origin."""
    known = keys()
    sources = sources or {}

    def origin(key: str) -> str:
        return f"(from {sources.get(key, 'a change made in code')})"

    for key in values:
        if key not in known:
            raise SettingsError(f"unknown setting {key} {origin(key)}")
    sections: dict[str, dict[str, Any]] = {}
    top: dict[str, Any] = {}
    for key, raw in values.items():
        kind, fld = known[key]
        try:
            value = _coerce(key, kind, raw, fld)
        except SettingsError as exc:
            raise SettingsError(f"{exc} {origin(key)}") from exc
        if "." in key:
            section, name = key.split(".", 1)
            sections.setdefault(section, {})[name] = value
        else:
            top[key] = value
    hints = _hints(Settings)
    for section, items in sections.items():
        top[section] = hints[section](**items)
    return Settings(**top)


def _file_values(path: str) -> dict[str, Any]:
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise SettingsError(f"config file {path} (from {CONFIG_ENV}) does not exist") from exc
    except tomllib.TOMLDecodeError as exc:
        raise SettingsError(f"config file {path} is not valid TOML: {exc}") from exc
    flat: dict[str, Any] = {}
    for name, value in data.items():
        if isinstance(value, dict):
            for sub_name, sub_value in value.items():
                flat[f"{name}.{sub_name}"] = sub_value
        else:
            flat[name] = value
    return flat


def _env_values(environ: Mapping[str, str]) -> dict[str, tuple[Any, str]]:
    """The settings the environment sets: dotted key -> (value, the variable that set it)."""
    flat: dict[str, tuple[Any, str]] = {}
    for alias, key in ALIASES.items():
        if environ.get(alias):
            flat[key] = (environ[alias], alias)
    for name, value in environ.items():
        if (not name.startswith(ENV_PREFIX) or name.startswith(RESERVED_ENV)
                or name in CLIENT_ENV):
            continue
        flat[name[len(ENV_PREFIX):].lower().replace("__", ".")] = (value, name)
    return flat


def load_settings(
    environ: Mapping[str, str] | None = None, overrides: Mapping[str, Any] | None = None
) -> Settings:
    """Build the settings from defaults, the file named by BURNBOX_CONFIG, the environment,
    then `overrides` (dotted keys; used by tests and the CLI). Raise SettingsError naming the key
    on a malformed, unknown or unsafe value."""
    environ = os.environ if environ is None else environ
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    if environ.get(CONFIG_ENV):
        path = environ[CONFIG_ENV]
        for key, value in _file_values(path).items():
            values[key], sources[key] = value, f"the file {path}"
    for key, (value, name) in _env_values(environ).items():
        values[key], sources[key] = value, f"the environment variable {name}"
    for key, value in (overrides or {}).items():
        values[key], sources[key] = value, "a command-line option"
    settings = _build(values, sources)
    check_trusted_domains(settings)
    check_encryption_keys(settings)
    check_timezone(settings)
    check_spam_engine(settings)
    check_production(settings)
    return settings


def check_encryption_keys(settings: Settings) -> None:
    """Refuse a `secrets.encryption_keys` entry that is not a Fernet key, at start rather than
    when the first secret is stored or read."""
    from cryptography.fernet import Fernet  # here: importing this module loads nothing heavy

    for index, key in enumerate(settings.secrets.encryption_keys):
        try:
            Fernet(key.encode("ascii"))
        except (ValueError, UnicodeEncodeError):
            raise SettingsError(f"setting secrets.encryption_keys: key {index + 1} is not a "
                                "Fernet key (32 url-safe base64-encoded bytes; `burnbox "
                                "secrets-key` makes one)") from None


def check_timezone(settings: Settings) -> None:
    """Refuse a `defaults.timezone` that is not an IANA zone name: new accounts start with it,
    and a client could not render times in it."""
    import zoneinfo  # here: the zone list is read only when settings are loaded

    if settings.defaults.timezone not in zoneinfo.available_timezones():
        raise SettingsError(f"setting defaults.timezone: {settings.defaults.timezone!r} is not "
                            "an IANA time zone name such as Europe/Berlin")


def check_spam_engine(settings: Settings) -> None:
    """Refuse a `checks.spam_engine` address that names no engine, at start rather than at the
    first e-mail."""
    from burnbox.spam_engines import EngineAddressError, parse_engine

    try:
        parse_engine(settings.checks.spam_engine)
    except EngineAddressError as exc:
        raise SettingsError(f"setting checks.spam_engine: {exc}") from None


def check_trusted_domains(settings: Settings) -> None:
    """Refuse a `domains.trusted` entry that is not a domain name of two labels or more."""
    for name in settings.domains.trusted:
        if TRUSTED_NAME.fullmatch(name.strip().rstrip(".").lower()) is None:
            raise SettingsError(f"setting domains.trusted: {name!r} is not a domain name such "
                                "as burnbox.test (IDNs as xn-- labels)")


def check_production(settings: Settings) -> None:
    """Refuse settings that are unsafe in production: a placeholder or short JWT secret.

    An empty one is left to `burnbox.signing_secret`, which generates a random secret on SQLite
    and refuses to start on any other database."""
    secret = settings.auth.jwt_secret
    if settings.env != "production" or not secret:
        return
    if secret.strip().lower() in PLACEHOLDER_SECRETS or "change" in secret.lower():
        raise SettingsError("setting auth.jwt_secret: a real secret is required in production")
    if len(secret) < MIN_SECRET_LENGTH:
        raise SettingsError(
            f"setting auth.jwt_secret: needs {MIN_SECRET_LENGTH}+ characters in production"
        )


def render_example() -> str:
    """The example config file: every key, its description and its default, in TOML."""
    lines = ["# Burnbox configuration: every key with its default. Point BURNBOX_CONFIG at it.",
             "# Environment variables override it: BURNBOX_<SECTION>__<KEY>, e.g.",
             "# BURNBOX_DEFAULTS__MAX_SESSIONS_PER_USER=10.", ""]
    current = None
    for key, (_, fld) in keys().items():
        section, _, name = key.rpartition(".")
        if section != current and section:
            lines += ["", f"[{section}]"]
            current = section
        lines.append(f"# {fld.metadata['help']}")
        default = fld.default if fld.default is not dataclasses.MISSING else fld.default_factory()
        lines.append(f"{name} = {_toml_value(default)}")
    return "\n".join(lines) + "\n"


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, timedelta):
        return f'"{format_duration(value)}"'
    if isinstance(value, tuple):
        return "[" + ", ".join(f'"{v}"' for v in value) + "]"
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'
