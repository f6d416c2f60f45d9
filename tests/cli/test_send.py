"""`burnbox send`: a test message over real SMTP to Burnbox's own SMTP server."""

from sqlalchemy import select

from mailin.server import MailinThread
from models.mail.entities import Email
from tests.processes import free_port


def test_send_delivers_over_smtp_and_the_mail_is_stored(burnbox, committed_runtime,
                                                         inbox_address):
    server = MailinThread(committed_runtime, host="127.0.0.1", port=0).start_and_wait()
    try:
        result = burnbox("send", inbox_address, "--subject", "Ping", "--text", "pong",
                         "--smtp-port", str(server.address[1]))
    finally:
        server.stop()
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(f"sent 'Ping' to {inbox_address} (<")
    assert ": 250 " in result.stdout
    with committed_runtime.db.session() as session:
        email = session.scalars(select(Email)).one()
    assert (email.to_address, email.subject, email.body_text.strip()) == (
        inbox_address, "Ping", "pong")
    assert email.from_address == "burnbox-test@sender.localhost"


def test_a_refused_recipient_and_an_absent_server_are_one_line(burnbox, committed_runtime):
    server = MailinThread(committed_runtime, host="127.0.0.1", port=0).start_and_wait()
    try:
        refused = burnbox("send", "nobody@nowhere.test", "--smtp-port", str(server.address[1]))
    finally:
        server.stop()
    assert (refused.exit_code, refused.stderr) == (
        1, "Error: the SMTP server refused the message to nobody@nowhere.test: 550 5.1.2 "
           "Domain not served here\n")
    port = free_port()
    absent = burnbox("send", "a@b.test", "--smtp-port", str(port))
    assert (absent.exit_code, absent.stderr) == (
        1, f"Error: cannot reach the SMTP server at 127.0.0.1:{port}: connection refused "
           "(is `burnbox serve` or `burnbox mailin` running?)\n")
