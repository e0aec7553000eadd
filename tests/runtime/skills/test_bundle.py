"""SKILL.md parsing, discovery from every source, the prompt's list and importing."""

from __future__ import annotations

from pathlib import Path

import pytest

from corral.errors import UsageError
from corral.runtime.skills import (
    SkillBundle,
    SkillCatalog,
    SkillError,
    import_bundle,
    parse_skill,
    render_skills,
)
from tests.runtime.skills.conftest import write_bundle


def bad(tmp_path: Path, name: str, front: str) -> SkillError:
    folder = tmp_path / name
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(front)
    found = parse_skill(folder, origin="drive")
    assert isinstance(found, SkillError)
    assert found.file == str(folder / "SKILL.md")
    return found


def test_a_bundle_declares_credentials_tools_and_a_body(bundles: Path) -> None:
    found = parse_skill(bundles / "wiki-notes", origin="folder")
    assert isinstance(found, SkillBundle)
    assert found.name == "wiki-notes" and found.description == "Publish notes."
    assert [(c.name, c.env) for c in found.credentials] == [("wiki", "WIKI_TOKEN")]
    assert found.body.startswith("# wiki-notes")


@pytest.mark.parametrize(
    ("front", "field", "says"),
    [
        ("# no front matter\n", "", "must start with YAML front matter"),
        ("---\nname: [unclosed\n---\n", "", "not valid YAML"),
        ("---\n- a list\n---\n", "", "must be a YAML mapping"),
        ("---\nname: Bad_Name\ndescription: x\n---\n", "name", "lower-case letters"),
        ("---\nname: other\ndescription: x\n---\n", "name", "must equal the bundle's folder"),
        ("---\nname: s\n---\nbody\n", "description", "is required"),
        ("---\nname: s\ndescription: x\ncredentials: wiki\n---\n", "credentials", "a list"),
        (
            "---\nname: s\ndescription: x\ncredentials:\n  - name: wiki\n    env: lower\n---\n",
            "credentials[0]",
            "upper-case name",
        ),
        (
            "---\nname: s\ndescription: x\ncredentials: [wiki, {name: w, env: WIKI}]\n---\n",
            "credentials[1]",
            "declared twice",
        ),
        ("---\nname: s\ndescription: x\nallowed-tools: {a: 1}\n---\n", "allowed-tools", "list"),
        # A credential may not stand in for what decides which program runs or who runs it,
        # nor for a variable the platform sets itself.
        *(
            (
                f"---\nname: s\ndescription: x\ncredentials: [{{name: w, env: {env}}}]\n---\n",
                "credentials[0]",
                says,
            )
            for env, says in [
                ("PATH", "belongs to the platform"),
                ("HOME", "belongs to the platform"),
                ("TMPDIR", "belongs to the platform"),
                ("LD_PRELOAD", "which code a program runs"),
                ("BASH_ENV", "which code a program runs"),
                ("GIT_DIR", "which code a program runs"),
                ("CORRAL_TICKET", "set by the platform"),
                ("SKILL_DIR", "set by the platform"),
            ]
        ),
    ],
)
def test_bad_front_matter_names_the_file_and_field(
    tmp_path: Path, front: str, field: str, says: str
) -> None:
    error = bad(tmp_path, "s", front)
    assert error.field == field and says in error.message, error


def test_discovery_packages_folders_and_drive_with_errors(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    write_bundle(package / "skills", "shared", description="From the package.")
    folder = tmp_path / "team-skills"
    write_bundle(folder, "team", description="From a settings folder.")
    write_bundle(folder, "shared", description="A second one of that name.")
    drive = tmp_path / "drive"
    write_bundle(drive / "skills", "mine", description="From the drive.")
    (drive / "skills" / "broken").mkdir()
    (drive / "skills" / "broken" / "SKILL.md").write_text("---\nname: broken\n---\n")
    catalog = SkillCatalog(packages={"pkg": package}, drive_dir=drive, folders=[folder])
    found = catalog.load()
    assert {n: b.origin for n, b in found.skills.items()} == {
        "shared": "package",
        "team": "folder",
        "mine": "drive",
    }
    assert found.skills["shared"].package == "pkg"
    fields = sorted((Path(e.file).parent.name, e.field) for e in found.errors)
    assert fields == [("broken", "description"), ("shared", "name")]
    assert "already taken" in next(e.message for e in found.errors if e.field == "name")
    # A disabled package's skills are gone; the name is free for the next source.
    without = catalog.load(disabled=frozenset({"pkg"}))
    assert without.skills["shared"].origin == "folder" and len(without.errors) == 1


def test_the_prompt_list_keeps_within_its_budget() -> None:
    skills = {f"skill-{i:02d}": f"Does thing number {i}. " * 3 for i in range(40)}
    block = render_skills(skills, 1_000)
    assert block is not None and len(block) <= 1_000
    assert block.startswith("<skills>") and block.endswith("</skills>")
    assert "- skill-00: Does thing number 0." in block
    assert "more skills past the prompt budget" in block
    assert render_skills({}, 1_000) is None
    full = render_skills(skills, 100_000)
    assert full is not None and "past the prompt budget" not in full and "skill-39" in full


def test_import_validates_then_copies_under_the_skill_name(tmp_path: Path) -> None:
    source = write_bundle(tmp_path / "download", "wiki-notes")
    renamed = source.rename(tmp_path / "download" / "wiki-notes-main")
    target = tmp_path / "drive" / "skills"
    imported = import_bundle(renamed, target)
    assert imported.origin == "drive" and imported.folder == (target / "wiki-notes").resolve()
    assert (target / "wiki-notes" / "scripts" / "probe.sh").is_file()
    with pytest.raises(UsageError, match="already exists"):
        import_bundle(renamed, target)
    assert import_bundle(renamed, target, replace=True).name == "wiki-notes"
    (renamed / "scripts" / "link").symlink_to("/etc/passwd")
    with pytest.raises(UsageError, match="is a symbolic link"):
        import_bundle(renamed, target, replace=True)
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "SKILL.md").write_text("---\nname: broken\n---\n")
    with pytest.raises(UsageError, match="field 'description'"):
        import_bundle(broken, target)
    assert sorted(p.name for p in target.iterdir()) == ["wiki-notes"]


def test_the_working_folder_is_not_a_secret_but_a_password_still_is() -> None:
    from corral.secrets import is_secret_name

    assert not is_secret_name("PWD") and not is_secret_name("OLDPWD")
    assert is_secret_name("DB_PWD") and is_secret_name("WIKI_TOKEN")


def test_corral_api_follows_the_bind_address_unless_a_setting_names_one(tmp_path: Path) -> None:
    from corral.kernel.tickets import Tickets
    from corral.runtime.skills import Skills
    from corral.runtime.skills.trust import SkillTrust

    def service(url: str | None) -> Skills:
        async def state() -> object:
            raise AssertionError("not read")

        return Skills(
            catalog=SkillCatalog(packages={}, drive_dir=tmp_path),
            tickets=Tickets(None),  # type: ignore[arg-type]
            state=state,  # type: ignore[arg-type]
            credentials=lambda: None,
            add_secrets=lambda values: None,
            api_url=url or "",
            api_url_fixed=url is not None,
            trust=SkillTrust(tmp_path / "trust.json"),
        )

    bound = service(None)
    bound.serving_at("0.0.0.0", 9000)
    assert bound.api_url == "http://127.0.0.1:9000"
    bound.serving_at("10.1.2.3", 80)
    assert bound.api_url == "http://10.1.2.3:80"
    fixed = service("https://corral.example/api")
    fixed.serving_at("0.0.0.0", 9000)
    assert fixed.api_url == "https://corral.example/api"


def test_links_cannot_point_a_skill_elsewhere(tmp_path: Path) -> None:
    drive = tmp_path / "drive"
    elsewhere = write_bundle(tmp_path / "elsewhere", "evil")
    (drive / "skills").mkdir(parents=True)
    (drive / "skills" / "evil").symlink_to(elsewhere)  # a folder lent from anywhere
    write_bundle(drive / "skills", "sneaky")
    secret_file = tmp_path / "private.toml"
    secret_file.write_text("---\nname: sneaky\ndescription: key = 'hunter2'\n---\n")
    (drive / "skills" / "sneaky" / "SKILL.md").unlink()
    (drive / "skills" / "sneaky" / "SKILL.md").symlink_to(secret_file)  # the platform reads it
    found = SkillCatalog(packages={}, drive_dir=drive).load()
    assert found.skills == {}
    assert sorted(Path(e.file).parent.name for e in found.errors) == ["evil", "sneaky"]
    assert all("is a symbolic link" in e.message for e in found.errors)
    moved = tmp_path / "drive2"
    moved.mkdir()
    (moved / "skills").symlink_to(tmp_path / "elsewhere")  # the whole folder, elsewhere
    [error] = SkillCatalog(packages={}, drive_dir=moved).load().errors
    assert "leads outside the drive" in error.message


@pytest.mark.parametrize("planted", ["skills", "skills/wiki-notes"])
def test_an_import_never_follows_a_link_planted_in_the_drive(tmp_path: Path, planted: str) -> None:
    """A command turned data://skills (or the skill's own folder) into a link to a folder
    outside; the operator's import must neither write there nor delete what is there."""
    source = write_bundle(tmp_path / "download", "wiki-notes")
    outside = tmp_path / "outside"
    (outside / "keep").mkdir(parents=True)
    (outside / "keep" / "file").write_text("keep\n")
    skills = tmp_path / "drive" / "skills"
    link = tmp_path / "drive" / planted
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(outside)
    if planted == "skills":
        with pytest.raises(UsageError, match="symbolic link"):
            import_bundle(source, skills, replace=True)
    else:
        import_bundle(source, skills, replace=True)  # the link itself is replaced, not followed
        assert (skills / "wiki-notes").is_dir() and not (skills / "wiki-notes").is_symlink()
    assert sorted(str(p.relative_to(outside)) for p in outside.rglob("*")) == ["keep", "keep/file"]
