"""The HTTP face: `create_app()` builds the Flask app with its API, WebSockets and health routes."""

from __future__ import annotations

from flask import Flask

from burnbox.settings import Settings, load_settings
from models.runtime import Runtime
from web.encoding import OrjsonProvider


def create_app(settings: Settings | None = None, runtime: Runtime | None = None) -> Flask:
    """Build the app for `settings` (loaded from the environment when None).

    `runtime` lets a caller share adapters with other faces in one process (the embedded mode
    and tests); by default the app builds its own and sets up the broker for them.
    """
    from compat.mailhog import views as mailhog_views
    from compat.mailpit import views as mailpit_views
    from web import context, docs, errors, health, per_request, ratelimit, routing, sockets, ui
    from web.api import make_api
    from web.views import admin as admin_views
    from web.views import admin_platform as admin_platform_views
    from web.views import admin_roles as admin_roles_views
    from web.views import admin_sso as admin_sso_views
    from web.views import analytics as analytics_views
    from web.views import apikeys as apikeys_views
    from web.views import audit as audit_views
    from web.views import auth as auth_views
    from web.views import chaos as chaos_views
    from web.views import demo as demo_views
    from web.views import domain_assignments as domain_assignments_views
    from web.views import domains as domains_views
    from web.views import email_checks as email_checks_views
    from web.views import email_downloads as email_downloads_views
    from web.views import email_waits as email_waits_views
    from web.views import emails as emails_views
    from web.views import files as files_views
    from web.views import inbox_overview as inbox_overview_views
    from web.views import inboxes as inboxes_views
    from web.views import invites as invites_views
    from web.views import members as members_views
    from web.views import messages as messages_views
    from web.views import notifications as notifications_views
    from web.views import orgs as orgs_views
    from web.views import release as release_views
    from web.views import sessions as sessions_views
    from web.views import setup as setup_views
    from web.views import smtp_credentials as smtp_credentials_views
    from web.views import sso as sso_views
    from web.views import tags as tags_views
    from web.views import teams as teams_views
    from web.views import thumbnails as thumbnails_views
    from web.views import viewing as viewing_views
    from web.views import webhooks as webhooks_views
    from web.views import ws as ws_views

    if runtime is None:
        import tasks

        settings = settings or load_settings()
        runtime = Runtime.from_settings(settings)
        tasks.setup_broker(runtime)
    settings = runtime.settings

    app = context.UnitOfWorkApp(__name__)
    app.json = OrjsonProvider(app)
    app.url_rule_class = routing.Rule  # before any route: malformed UUIDs in paths are 400s
    app.config["MAX_CONTENT_LENGTH"] = settings.http.max_request_bytes
    context.init_app(app, runtime)
    per_request.init_app(app, settings)
    ratelimit.init_app(app, settings)
    sockets.init_app(app, runtime.store)

    api = make_api(app)
    errors.register_error_handlers(app)
    api.register_blueprint(health.blp)
    for blueprint in (auth_views.blp, sso_views.blp, sessions_views.blp, setup_views.blp):
        api.register_blueprint(blueprint)
    for blueprint in (orgs_views.blp, members_views.blp, invites_views.blp, teams_views.blp,
                      apikeys_views.blp):
        api.register_blueprint(blueprint)
    for blueprint in (domains_views.blp, domain_assignments_views.blp):
        api.register_blueprint(blueprint)
    for blueprint in (webhooks_views.blp, notifications_views.blp, ws_views.blp):
        api.register_blueprint(blueprint)
    for blueprint in (inboxes_views.blp, emails_views.blp, email_waits_views.blp,
                      email_downloads_views.blp, email_checks_views.blp, files_views.blp,
                      demo_views.blp, chaos_views.blp, smtp_credentials_views.blp,
                      inbox_overview_views.blp, viewing_views.blp,
                      messages_views.blp, thumbnails_views.blp, release_views.blp,
                      tags_views.blp):
        api.register_blueprint(blueprint)
    for blueprint in (admin_views.blp, admin_platform_views.blp, admin_roles_views.blp,
                      admin_sso_views.blp, audit_views.blp, analytics_views.blp):
        api.register_blueprint(blueprint)
    api.register_blueprint(mailpit_views.blp)  # the compat faces (docs/compat.md)
    mailpit_views.document_doubled_view_paths(app, api.spec)
    api.register_blueprint(mailhog_views.blp)
    health.register_metrics(app, api, settings)
    app.register_blueprint(docs.bp)
    app.register_blueprint(ui.bp)
    return app
