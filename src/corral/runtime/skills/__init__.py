"""Skills: SKILL.md bundles found in packages, settings folders and the drive, listed in the
system prompt, activated through ``execute`` with their credentials staged for the run's
shell calls, and imported into the drive."""

from corral.runtime.skills.activation import TICKET_VARIABLE, Skills
from corral.runtime.skills.bundle import DeclaredCredential, SkillBundle, SkillError, parse_skill
from corral.runtime.skills.catalog import DRIVE_SKILLS, SkillCatalog, SkillSet
from corral.runtime.skills.importer import import_bundle
from corral.runtime.skills.prompt_block import SkillsBlock, render_skills

__all__ = [
    "DRIVE_SKILLS",
    "TICKET_VARIABLE",
    "DeclaredCredential",
    "SkillBundle",
    "SkillCatalog",
    "SkillError",
    "SkillSet",
    "Skills",
    "SkillsBlock",
    "import_bundle",
    "parse_skill",
    "render_skills",
]
