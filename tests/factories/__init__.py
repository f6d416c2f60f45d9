"""Shared test factories: realistic rows, one module per bounded context (identity, tenancy,
domains, mail, delivery, apikeys), instead of each test file building its own.

Every factory of rows takes the session to build in as its first argument, builds through the
domain code where that is how the rows come to exist (or writes the rows directly where a test
needs a state the code does not reach), takes keyword overrides for what a test chooses, and
FLUSHES: it never commits. The test owns the transaction:

    with runtime.db.transaction() as session:
        world = make_mail_world(session, runtime.settings)
        inbox = make_inbox(session, runtime.settings, world, alias="signup")

Under `runtime` every session joins the test's outer transaction, so the end of that block only
releases a savepoint and the rollback after the test undoes it all. Under `committed_runtime` the
same block really commits (as worker threads and processes need), and the fixture empties the
tables afterwards. A factory that raises inside the block rolls back with it, as the code under
test would. The exceptions are `mail.deliver` and `mail.make_email`: e-mails come to exist only
through the store behind DATA, which runs its own transaction, so they take the database (or
the runtime) and store as mailin does (`mail.message` builds the MIME bytes, as SMTP tests send
them).

The composed fixtures of `tests/conftest.py` build what most tests start from this way: `user`
(the login helpers' account), `world` (two orgs with a user in every role), `mail_world` (two
orgs whose teams each have a verified domain) and `owned_team`. Helpers that act through the
API or run services (tests/identity.py, tests/tenancy.py, tests/apikey_helpers.py, the DNS and
HTTP fixtures) stay outside this package.
"""
