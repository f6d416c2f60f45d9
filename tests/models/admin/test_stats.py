"""The admin stats figures, from mail really received over SMTP."""

import smtplib

from mailin.server import MailinThread
from models.admin.stats import platform_stats
from models.mail.inboxes import remove_lapsed_inboxes
from tests.factories.mail import lapse, make_inbox, make_mail_world, message

LOGO = bytes(range(256)) * 8


def _lapse_and_clean_up(runtime, inbox):
    """Lapse the inbox, run the cleanup, and return the figures after it."""
    with runtime.db.transaction() as session:
        lapse(session, inbox.id)
    with runtime.db.transaction() as session:
        remove_lapsed_inboxes(session, 10)
    with runtime.db.session() as session:
        return platform_stats(session)


def test_the_figures_count_every_email_ever_received_and_each_stored_object_once(
        committed_runtime):
    with committed_runtime.db.transaction() as session:
        world = make_mail_world(session, committed_runtime.settings)
        kept = make_inbox(session, committed_runtime.settings, world)
        lapsing = make_inbox(session, committed_runtime.settings, world)
    to_both = message(kept.full_address, subject="To both",
                      attachments=(("logo.png", "image/png", LOGO),))
    to_one = message(kept.full_address, subject="To one")
    server = MailinThread(committed_runtime, host="127.0.0.1", port=0).start_and_wait()
    try:
        with smtplib.SMTP(*server.address, timeout=10) as smtp:
            smtp.sendmail("shop@sender.example", [kept.full_address, lapsing.full_address],
                          to_both)
            smtp.sendmail("shop@sender.example", [kept.full_address], to_one)
    finally:
        server.stop()

    with committed_runtime.db.session() as session:
        # One message for two inboxes is two e-mails sharing one raw message and one logo.
        assert platform_stats(session) == {
            "total_emails": 3, "active_inboxes": 2, "total_domains": 2, "total_users": 6,
            "total_teams": 2, "storage_used_bytes": len(to_both) + len(LOGO) + len(to_one),
            "total_inboxes": 2, "total_sessions": 6, "total_webhooks": 0, "total_api_keys": 0}

    figures = _lapse_and_clean_up(committed_runtime, lapsing)
    # The cleanup takes the inbox and its e-mail, not the history; the objects stay while the
    # other inbox's copy uses them.
    assert (figures["total_emails"], figures["active_inboxes"]) == (3, 1)
    assert figures["storage_used_bytes"] == len(to_both) + len(LOGO) + len(to_one)

    figures = _lapse_and_clean_up(committed_runtime, kept)
    assert (figures["total_emails"], figures["active_inboxes"]) == (3, 0)
    assert figures["storage_used_bytes"] == 0
