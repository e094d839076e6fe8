"""The house's floors. `goldeval` (the library a RAG team's CI installs alone) imports no Django,
no app and no torch. Each app imports only from the floors below it: goldset, then corpus, then
labelling, then answers and judges (side by side), then evaluation, then health and production
(side by side: neither imports the other), then demo. Imports inside functions count too: a
hidden import is still a way up. Nothing is imported only for its side effects."""

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
FLOORS = [
    {"goldset"},
    {"corpus"},
    {"labelling"},
    {"answers", "judges"},
    {"evaluation"},
    {"health", "production"},
    {"demo"},
]
APPS = set().union(*FLOORS)


def imports(path: Path) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
    return found


def code_of(folder: str) -> list[Path]:
    return sorted((REPO / folder).rglob("*.py"))


def floor_of(app: str) -> int:
    return next(number for number, floor in enumerate(FLOORS) if app in floor)


@pytest.mark.parametrize("app", sorted(APPS))
def test_no_app_imports_a_floor_above_it_or_beside_it(app):
    wrong = [
        f"{path.relative_to(REPO)}:{line} imports {module}"
        for path in code_of(app)
        for line, module in imports(path)
        if (top := module.split(".")[0]) in APPS and top != app and floor_of(top) >= floor_of(app)
    ]
    assert not wrong, "\n".join(wrong)


def test_goldeval_imports_no_django_no_app_and_no_torch():
    banned = APPS | {"django", "torch", "sentence_transformers", "celery"}
    wrong = [
        f"{path.relative_to(REPO)}:{line} imports {module}"
        for path in code_of("goldeval")
        for line, module in imports(path)
        if module.split(".")[0] in banned
    ]
    assert not wrong, "\n".join(wrong)


def test_goldeval_declares_only_what_it_needs():
    import tomllib

    project = tomllib.loads((REPO / "goldeval" / "pyproject.toml").read_text())["project"]
    text = " ".join(project["dependencies"]).lower()
    for heavy in ("django", "torch", "celery", "sentence-transformers"):
        assert heavy not in text


def test_nothing_is_imported_only_for_its_side_effects():
    # An import kept alive by `noqa: F401` exists only to run the imported module's top level
    # (registries, decorators): that is how hidden calls between apps used to be wired.
    wrong = [
        f"{path.relative_to(REPO)}:{number}"
        for folder in sorted(APPS | {"goldeval"})
        for path in code_of(folder)
        if "migrations" not in path.parts
        for number, text in enumerate(path.read_text().splitlines(), start=1)
        if "noqa: F401" in text
    ]
    assert not wrong, "\n".join(wrong)


def test_the_guard_sees_a_hidden_import(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text("def f():\n    from evaluation import gold\n")
    assert imports(sample) == [(2, "evaluation")]


# Two known `ready()` hooks, nothing else may join them: labelling's access listener (the
# corpus tells labelling when a document's groups change, so assignments' completion follows)
# and the judges' voter (labelling shows the AI judge's vote to leads and, where a lead turned
# that on, counts it in the gold rule).
KNOWN_READY = {"labelling/apps.py", "judges/apps.py"}
KNOWN_HOOKS = {
    "corpus/services/projects.py: _access_listener",
    "labelling/services/machine_votes.py: _voter",
}


def test_no_app_config_defines_ready():
    wrong = [
        f"{path.relative_to(REPO)}:{node.lineno} {node.name}.ready()"
        for app in sorted(APPS)
        for path in code_of(app)
        if path.name == "apps.py" and str(path.relative_to(REPO)) not in KNOWN_READY
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ClassDef)
        and any(isinstance(f, ast.FunctionDef) and f.name == "ready" for f in node.body)
    ]
    assert not wrong, "\n".join(wrong)


def hooks_set_in(path: Path) -> list[str]:
    """Module globals a function of `path` rebinds (`global x; x = ...`): a hook another app can
    fill, the corpus then calling up into it."""
    return [
        name
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Global)
        for name in node.names
    ]


def test_the_corpus_and_labelling_have_no_hook_other_apps_fill():
    wrong = [
        hook
        for app in ("corpus", "labelling")
        for path in code_of(app)
        if "migrations" not in path.parts
        for hook in (f"{path.relative_to(REPO)}: {name}" for name in hooks_set_in(path))
        if hook not in KNOWN_HOOKS
    ]
    assert not wrong, "\n".join(wrong)


def test_the_hook_guard_sees_a_hook(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text("_hook = None\n\n\ndef listen(f):\n    global _hook\n    _hook = f\n")
    assert hooks_set_in(sample) == ["_hook"]
