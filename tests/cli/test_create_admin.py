"""`burnbox create-admin`: completes setup from the command line, then adds administrators."""

from click.testing import CliRunner
from sqlalchemy import select

from burnbox.cli import main
from models.admin.setup import is_complete
from models.domains.assignments import DomainAssignment
from models.domains.domains import Domain
from models.identity.users import User
from models.tenancy.orgs import Org, OrgMember
from models.tenancy.teams import Team, TeamMember
from tests.identity import PASSWORD


def _run(settings, *args):
    env = {"BURNBOX_DATA_DIR": settings.data_dir, "BURNBOX_ENV": "test",
           "BURNBOX_LOG__FORMAT": "text", "BURNBOX_AUTH__ARGON2_TIME_COST": "1",
           "BURNBOX_AUTH__ARGON2_MEMORY_KIB": "1024", "BURNBOX_AUTH__ARGON2_PARALLELISM": "1",
           "BURNBOX_DATABASE__URL": settings.database.url,
           "BURNBOX_AUTH__JWT_SECRET": settings.auth.jwt_secret}
    return CliRunner(env=env).invoke(main, ["create-admin", *args])


def test_before_setup_create_admin_completes_setup_with_a_first_org(committed_runtime):
    result = _run(committed_runtime.settings, "--email", "Root@Example.test",
                  "--password", PASSWORD, "--org", "Acme")
    assert result.exit_code == 0, result.output
    assert "setup completed with the org 'Acme' (acme)" in result.output
    with committed_runtime.db.session() as session:
        [admin] = session.scalars(select(User)).all()
        [org] = session.scalars(select(Org)).all()
        [member] = session.scalars(select(OrgMember)).all()
        assert is_complete(session)
    assert (admin.email, admin.is_system_admin, admin.display_name) == (
        "root@example.test", True, "Administrator")
    assert (member.user_id, member.org_id, member.role) == (admin.id, org.id, "owner")


def test_before_setup_create_admin_can_add_a_first_domain_and_team(committed_runtime):
    result = _run(committed_runtime.settings, "--email", "root@example.test",
                  "--password", PASSWORD, "--org", "Acme", "--domain", "mail.example.test",
                  "--team", "Support")
    assert result.exit_code == 0, result.output
    with committed_runtime.db.session() as session:
        [admin] = session.scalars(select(User)).all()
        [org] = session.scalars(select(Org)).all()
        [domain] = session.scalars(select(Domain)).all()
        [team] = session.scalars(select(Team)).all()
        [lead] = session.scalars(select(TeamMember)).all()
        [assignment] = session.scalars(select(DomainAssignment)).all()
    assert (domain.org_id, domain.domain_name) == (org.id, "mail.example.test")
    assert (team.org_id, team.name) == (org.id, "Support")
    assert (lead.user_id, lead.role) == (admin.id, "lead")
    # The team can use the domain at once (a domain no team is assigned to serves no inbox).
    assert (assignment.domain_id, assignment.team_id, assignment.access_level) == (
        domain.id, team.id, "full")


def test_create_admin_with_a_bad_domain_completes_nothing(committed_runtime):
    result = _run(committed_runtime.settings, "--email", "root@example.test",
                  "--password", PASSWORD, "--domain", "not a domain", "--team", "Support")
    assert result.exit_code == 1
    assert "domain" in result.output
    with committed_runtime.db.session() as session:
        assert not is_complete(session)
        assert session.scalars(select(User)).all() == []
        assert session.scalars(select(Team)).all() == []


def test_after_setup_create_admin_adds_another_administrator(committed_runtime):
    settings = committed_runtime.settings
    assert _run(settings, "--email", "first@example.test", "--password", PASSWORD).exit_code == 0
    result = _run(settings, "--email", "second@example.test", "--password", PASSWORD)
    assert result.exit_code == 0, result.output
    assert "setup completed" not in result.output
    with committed_runtime.db.session() as session:
        admins = session.scalars(select(User.email).where(User.is_system_admin)).all()
        assert sorted(admins) == ["first@example.test", "second@example.test"]
        assert len(session.scalars(select(Org)).all()) == 1


def test_create_admin_refuses_a_taken_address_and_a_weak_password(committed_runtime):
    settings = committed_runtime.settings
    assert _run(settings, "--email", "first@example.test", "--password", PASSWORD).exit_code == 0
    taken = _run(settings, "--email", "FIRST@example.test", "--password", PASSWORD)
    assert taken.exit_code == 1
    assert "already exists" in taken.output
    weak = _run(settings, "--email", "other@example.test", "--password", "short")
    assert weak.exit_code == 1
    assert "password" in weak.output
