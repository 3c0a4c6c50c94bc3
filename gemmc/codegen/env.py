"""The one Jinja2 environment. It finds the shared pieces (prelude, macros, the epilogue, launcher, header) in the
top-level `templates/` folder (shipped in the wheel as `gemmc/templates` by pyproject's force-include, so a
non-editable install finds them too), a family's template in the family's own folder (gemmc/families/NAME/), and
the pieces a family's template includes by their folder-qualified name ("tensorcore/mainloop_mma.j2"), so that two
families' pieces never shadow each other."""

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


def indent_code(text: str, width: int) -> str:
    """A macro's C++ lines placed at a call indented by `width`: every line after the first gets `width` spaces,
    except preprocessor lines (#pragma), which stay at column 0 as in the rest of the generated code."""
    first, *rest = text.split("\n")
    pad = " " * width
    return "\n".join([first, *(line if not line or line.startswith("#") else pad + line for line in rest)])


@cache
def environment() -> jinja2.Environment:
    families = sorted({str(f.folder.parent) for f in FAMILIES})
    folders = [str(template_dir()), *(str(f.folder) for f in FAMILIES), *families]
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(folders), undefined=jinja2.StrictUndefined,
                             trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True, autoescape=False)
    env.filters["indent_code"] = indent_code
    return env


def render(name: str, context: dict) -> str:
    return environment().get_template(name).render(**context)
