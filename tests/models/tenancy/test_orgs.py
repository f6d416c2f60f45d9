"""The minimal org core: slugs, the owner membership, and who is an org's only owner."""

import pytest

from models.errors import ValidationFailed
from models.tenancy.orgs import OWNER, OrgMember, create_org, slugify, sole_owner_org_ids
from tests.factories.identity import make_password_user


@pytest.mark.parametrize(("name", "slug"), [
    ("Acme Widgets", "acme-widgets"), ("  Ünïcodé  Café ", "unicode-cafe"),
    ("***", "org"), ("a" * 100, "a" * 64)])
def test_slugs_are_lower_case_ascii_words_joined_by_hyphens(name, slug):
    assert slugify(name) == slug


def test_an_org_gets_a_unique_slug_and_its_creator_as_owner(runtime, user):
    with runtime.db.transaction() as session:
        first = create_org(session, "Acme", user.id)
        second = create_org(session, "ACME", user.id)
    assert first.slug == "acme"
    assert second.slug.startswith("acme-") and len(second.slug) == len("acme-") + 8
    with runtime.db.session() as session:
        roles = {m.org_id: m.role for m in session.query(OrgMember)}
    assert roles == {first.id: OWNER, second.id: OWNER}


def test_an_org_name_must_have_1_to_200_characters(runtime, user):
    with runtime.db.session() as session, pytest.raises(ValidationFailed):
        create_org(session, "   ", user.id)


def test_sole_owners_are_found_and_co_owned_orgs_are_not(runtime):
    with runtime.db.transaction() as session:
        alice = make_password_user(session, runtime.settings, email="alice@example.test")
        bob = make_password_user(session, runtime.settings, email="bob@example.test")
    with runtime.db.transaction() as session:
        alone = create_org(session, "Alone", alice.id)
        shared = create_org(session, "Shared", alice.id)
        session.add(OrgMember(org_id=shared.id, user_id=bob.id, role=OWNER))
    with runtime.db.session() as session:
        assert sole_owner_org_ids(session, alice.id) == [alone.id]
        assert sole_owner_org_ids(session, bob.id) == []
