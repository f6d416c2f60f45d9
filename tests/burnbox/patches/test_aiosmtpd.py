"""PatchedSMTP (burnbox.patches.aiosmtpd) against aiosmtpd's own SMTP: a copied session holds
what a constructed one holds, a MAIL or RCPT path reads as aiosmtpd reads it, and the names
the DATA of mailin relies on are aiosmtpd's, shaped as it relies on them. (The DATA read in
blocks is compared with aiosmtpd's over real sockets in tests/mailin/test_data_reading.py.)"""

from __future__ import annotations

import asyncio
import inspect
import types

import pytest
from aiosmtpd.smtp import SMTP, _AuthMechAttr
from hypothesis import example, given
from hypothesis import strategies as st

from burnbox.patches import aiosmtpd as patches
from burnbox.patches.aiosmtpd import PatchedSMTP
from tests.properties import property_settings

LIMIT = 64 * 1024


class _Handler:
    async def handle_DATA(self, server, session, envelope):
        return "250 OK"


def _session(**kwargs) -> PatchedSMTP:
    return PatchedSMTP(_Handler(), reader_limit=LIMIT, **kwargs)


def test_an_unproved_aiosmtpd_is_refused(refused_at):
    assert refused_at(patches, "aiosmtpd", "1.5.0").startswith("aiosmtpd 1.5.0 is installed")


# What a session shares with the template it was copied from: the server's configuration, set
# once and never changed by a connection.
_SHARED = {"loop", "_loop", "event_handler", "tls_context", "_auth_callback", "_handle_hooks"}
_IMMUTABLE = (str, int, float, bool, type(None), types.FunctionType, tuple)


def test_a_copied_session_holds_what_a_constructed_one_holds_sharing_only_configuration():
    template, built = _session(), _session()
    assert built._stream_reader._limit == LIMIT  # a constructed session reads as a copy does
    sessions = [template.fresh(), template.fresh()]
    for session in sessions:
        # Everything aiosmtpd's constructor sets, and nothing else.
        assert vars(session).keys() == vars(built).keys()
        for name, value in vars(session).items():
            if not isinstance(value, _IMMUTABLE):
                others = (vars(template)[name], *(vars(other)[name] for other in sessions
                                                   if other is not session))
                assert name in _SHARED or all(value is not other for other in others), name
        assert session._smtp_methods.keys() == built._smtp_methods.keys()
        assert all(method.__self__ is session for method in session._smtp_methods.values())
        assert session._auth_methods.keys() == built._auth_methods.keys()
        assert all(mechanism.method.__self__ is session
                   for mechanism in session._auth_methods.values() if mechanism.is_builtin)
        assert session._stream_reader._limit == LIMIT


def test_a_copied_sessions_commands_go_through_guarded():
    guarded: list[object] = []

    class Guarding(PatchedSMTP):
        def guarded(self, command):
            assert command.__self__ is self  # bound to the copy, not to the template
            guarded.append(command)
            return command

    template = Guarding(_Handler(), reader_limit=LIMIT)
    session = template.fresh()
    assert guarded == list(session._smtp_methods.values())
    assert guarded and all(command.__self__ is session for command in guarded)


_PATH_CHARACTERS = st.sampled_from(list("aZ09.-_+@<> ()\t\"[]:,;\\=é"))


def _reads_no_address(protocol: PatchedSMTP, path: str) -> bool:
    """Whether our reading of `path` finds no address in it: (None, None), or a raise."""
    try:
        return protocol._getaddr(path) == (None, None)
    except Exception:
        return True


@property_settings(3000)
@given(st.one_of(st.text(_PATH_CHARACTERS, max_size=30),
                 st.from_regex(r"<[a-z.]{1,5}@[a-z.-]{1,6}>( {0,2}[A-Z= (]{0,5})?",
                               fullmatch=True)))
# email's parser itself crashes (UnboundLocalError) on a domain literal opened and followed by
# nothing but white space: a path aiosmtpd never hands over (it strips the argument first).
@example("0()@[ ")
@example("a@[\t")
def test_mail_and_rcpt_paths_read_as_aiosmtpd_reads_them(path):
    protocol = _session()
    try:
        expected = SMTP._getaddr(protocol, path)
    except (IndexError, AttributeError):
        expected = (None, None)  # ours answers these crashes of email's parser: malformed
    except Exception:
        # Nothing to compare with: ours must then at least not read an address that aiosmtpd
        # could not (the fast path claims only what aiosmtpd reads the same way).
        assert _reads_no_address(protocol, path)
        return
    assert protocol._getaddr(path) == expected


def test_a_plain_path_keeps_the_local_part_limit():
    protocol = _session()
    protocol.local_part_limit = 3
    assert protocol._getaddr("<abc@example.com> SIZE=10") == ("abc@example.com", "SIZE=10")
    assert protocol._getaddr("<abcd@example.com>") == (None, None)


def test_a_command_moves_the_idle_deadline_and_keeps_the_one_timer():
    # Sessions over real sockets (tests/mailin/test_ingest.py) show the timeout itself.
    loop = asyncio.new_event_loop()
    try:
        session = _session(loop=loop, timeout=60)
        session._reset_timeout()
        timer = session._timeout_handle
        session._reset_timeout()
        assert session._timeout_handle is timer and not timer.cancelled()
        assert session._idle_deadline > loop.time() + 59
        session._reset_timeout(5)  # sooner than the timer: set anew
        assert timer.cancelled() and session._timeout_handle.when() == session._idle_deadline
    finally:
        loop.close()


@pytest.mark.parametrize(("name", "parameters"), [
    ("_getaddr", ["self", "arg"]),
    ("_cb_client_connected", ["self", "reader", "writer"]),
    ("_call_handler_hook", ["self", "command", "args"]),
    ("_set_post_data_state", ["self"]),
    ("_reset_timeout", ["self", "duration"]),
    ("_timeout_cb", ["self"]),
])
def test_the_methods_patched_or_called_are_aiosmtpds_with_the_shape_relied_on(name, parameters):
    assert list(inspect.signature(getattr(SMTP, name)).parameters) == parameters


def test_the_attributes_read_are_aiosmtpds():
    session = SMTP(_Handler())
    for name in ("_smtp_methods", "_auth_methods", "_decode_data", "_stream_reader",
                 "_timeout_handle", "_timeout_duration"):
        assert hasattr(session, name), name
    assert all(isinstance(mechanism, _AuthMechAttr) for mechanism in
               session._auth_methods.values())
    assert _AuthMechAttr._fields == ("method", "is_builtin")
    # `_reader` and `_writer` are set once the connection is made (`_cb_client_connected`).
    assert "self._reader = reader" in inspect.getsource(SMTP._cb_client_connected)
    assert "self._writer = writer" in inspect.getsource(SMTP._cb_client_connected)
