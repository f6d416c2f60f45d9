"""Domain layer: SQLAlchemy entities (one module per aggregate), actions, domain errors and events.

Importing this package registers every entity on `Base.metadata`, which Alembic compares against
the migrations. models never imports Flask.
"""

from models.analytics_counters import MailCounter
from models.apikeys import ApiKey
from models.audit import AuditEntry
from models.db import Base
from models.domain_verification import DomainCheck
from models.domains import Domain, DomainAssignment
from models.events import Event
from models.inboxes import Inbox
from models.invites import Invite
from models.mailstore import Attachment, Email
from models.notifications import Notification
from models.orgs import Org, OrgMember
from models.platform import PlatformSettings
from models.rbac import Permission, Role, RolePermission
from models.sessions import RefreshToken, UserSession
from models.teams import Team, TeamMember
from models.users import AccountToken, User
from models.webhooks import DeliveryLogEntry, Webhook, WebhookDelivery

__all__ = ["AccountToken", "ApiKey", "Attachment", "AuditEntry", "Base", "DeliveryLogEntry",
           "Domain", "DomainAssignment", "DomainCheck", "Email", "Event", "Inbox", "Invite",
           "MailCounter", "Notification", "Org", "OrgMember", "Permission", "PlatformSettings",
           "RefreshToken", "Role", "RolePermission", "Team", "TeamMember", "User", "UserSession",
           "Webhook", "WebhookDelivery"]
