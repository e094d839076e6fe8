"""The apps are floors: each imports only from the floors below it (goldset, then corpus, then
labelling, then evaluation), so reading a lower floor never needs a higher one. Imports inside
functions count too: a hidden import is still a way up."""

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
FLOORS = ["goldset", "corpus", "labelling", "evaluation"]
APPS = {"corpus", "labelling", "evaluation"}


def imports(path: Path) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
    return found


def code_of(floor: str) -> list[Path]:
    return sorted((REPO / floor).rglob("*.py"))


@pytest.mark.parametrize("floor", FLOORS)
def test_no_floor_imports_one_above_it(floor):
    above = set(FLOORS[FLOORS.index(floor) + 1 :]) & APPS
    wrong = [
        f"{path.relative_to(REPO)}:{line} imports {module}"
        for path in code_of(floor)
        for line, module in imports(path)
        if module.split(".")[0] in above
    ]
    assert not wrong, "\n".join(wrong)


def test_nothing_is_imported_only_for_its_side_effects():
    # An import kept alive by `noqa: F401` exists only to run the imported module's top level
    # (registries, decorators): that is how hidden calls between apps used to be wired.
    wrong = [
        f"{path.relative_to(REPO)}:{number}"
        for floor in FLOORS
        for path in code_of(floor)
        if "migrations" not in path.parts
        for number, text in enumerate(path.read_text().splitlines(), start=1)
        if "noqa: F401" in text
    ]
    assert not wrong, "\n".join(wrong)


def test_the_guard_sees_a_hidden_import(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text("def f():\n    from evaluation import gold\n")
    assert imports(sample) == [(2, "evaluation")]


def test_no_module_holds_more_than_one_room():
    # A module past ~650 lines has always turned out to mix concerns here; extraction.py is
    # one concern (reading every document format safely) and may stay long.
    allowed = {"corpus/extraction.py"}
    long = [
        f"{path.relative_to(REPO)}: {lines} lines"
        for floor in FLOORS
        for path in code_of(floor)
        if "migrations" not in path.parts
        and str(path.relative_to(REPO)) not in allowed
        and (lines := len(path.read_text().splitlines())) > 650
    ]
    assert not long, "\n".join(long)
