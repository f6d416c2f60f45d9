"""Domain layer: SQLAlchemy entities (one module per aggregate), actions, domain errors and events.

Importing this package registers every entity on `Base.metadata`, which Alembic compares against
the migrations. models never imports Flask. This module is the one exception to the direction of
imports between contexts (each imports only those below it, see docs/architecture.md): it
imports an entity of every context, and nothing in models imports it.
"""

from models.analytics.rollups import DayRollup, DomainDayRollup, RollupMark, SenderDayRollup
from models.apikeys.keys import ApiKey
from models.db import Base
from models.delivery.notification_preferences import NotificationPreference
from models.delivery.notifications import Notification
from models.delivery.webhooks import DeliveryLogEntry, Webhook, WebhookDelivery
from models.domains.assignments import DomainAssignment
from models.domains.domains import Domain, DomainCheck
from models.events import Event
from models.identity.sessions import RefreshToken, UserSession
from models.identity.users import AccountToken, User
from models.mail.chaos import ChaosRule
from models.mail.counters import InboxCounter, MailCounter
from models.mail.entities import Attachment, Email
from models.mail.inboxes import Inbox
from models.mail.release import Release, ReleaseRecipients
from models.mail.release_rules import ReleaseRule
from models.mail.smtp_credentials import SmtpCredential
from models.mail.tag_entities import EmailTag, Tag, TagRule
from models.platform.audit import AuditEntry
from models.platform.audit_exports import AuditExport
from models.platform.settings import PlatformSettings
from models.sso.identities import SsoIdentity, SsoSession
from models.sso.mappings import SsoDomainMapping
from models.sso.providers import SsoProvider
from models.system_config import SystemConfig
from models.tenancy.invites import Invite
from models.tenancy.orgs import Org, OrgMember
from models.tenancy.rbac import Permission, Role, RolePermission
from models.tenancy.teams import Team, TeamMember

__all__ = ["AccountToken", "ApiKey", "Attachment", "AuditEntry", "AuditExport", "Base", "ChaosRule",
           "DayRollup",
           "DeliveryLogEntry", "Domain", "DomainAssignment", "DomainCheck", "DomainDayRollup",
           "Email", "EmailTag", "Event", "Inbox", "InboxCounter", "Invite", "MailCounter",
           "Notification",
           "NotificationPreference",
           "Org", "OrgMember", "Permission", "PlatformSettings", "RefreshToken", "Release",
           "ReleaseRecipients", "ReleaseRule", "Role",
           "RolePermission", "RollupMark", "SenderDayRollup", "SmtpCredential",
           "SsoDomainMapping", "SsoIdentity", "SsoProvider", "SsoSession", "SystemConfig", "Tag",
           "TagRule", "Team", "TeamMember", "User", "UserSession",
           "Webhook", "WebhookDelivery"]
