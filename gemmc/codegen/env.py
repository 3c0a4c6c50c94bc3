"""The one Jinja2 environment. It finds a family's template in the family's own folder (gemmc/families/NAME/) and
the shared pieces (prelude, macros, launcher, header) in the top-level `templates/` folder (shipped in the wheel
as `gemmc/templates` by pyproject's force-include, so a non-editable install finds them too)."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import jinja2

from gemmc.families.registry import FAMILIES


def template_dir() -> Path:
    here = Path(__file__).resolve().parent.parent
    for candidate in (here / "templates", here.parent / "templates"):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError("gemmc's templates/ folder is missing from the installation")


@cache
def environment() -> jinja2.Environment:
    folders = [str(template_dir()), *(str(f.folder) for f in FAMILIES)]
    return jinja2.Environment(loader=jinja2.FileSystemLoader(folders), undefined=jinja2.StrictUndefined,
                              trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True, autoescape=False)


def render(name: str, context: dict) -> str:
    return environment().get_template(name).render(**context)
