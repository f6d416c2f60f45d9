"""Shared test factories: realistic rows, one module per bounded context (identity, tenancy,
domains, mail, delivery, apikeys), instead of each test file building its own.

Every factory takes the session to build in as its first argument, builds through the domain
code where that is how the rows come to exist (or writes the rows directly where a test needs a
state the code does not reach), takes keyword overrides, and FLUSHES: it never commits. The
test owns the transaction:

    with runtime.db.transaction() as session:
        world = make_mail_world(session, runtime.settings)
        inbox = make_inbox(session, runtime.settings, world, alias="signup")

Under `runtime` every session joins the test's outer transaction, so the end of that block only
releases a savepoint and the rollback after the test undoes it all. Under `committed_runtime` the
same block really commits (as worker threads and processes need), and the fixture empties the
tables afterwards. A factory that raises inside the block rolls back with it, as the code under
test would. The one exception is `mail.make_email`: e-mails come to exist only through the
store behind DATA, which runs its own transaction, so it takes the runtime.

The composed fixtures of `tests/conftest.py` (`user`, ...) build what most tests start from this
way.
"""
