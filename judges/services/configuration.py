"""Adding and changing a judge: checked like the HTTP retriever's endpoint before it is stored.

The URL is read by `corpus.httpurl`'s strict rule and must be allowed by the host policy
(``GOLDSET_HTTP_ALLOWED_HOSTS``); the API key is an ``env:NAME`` reference, never the key; a
prompt edit is a new prompt version, and so is a new version of the project's guideline (the
prompt's ``{{scale}}`` carries it), so calibration stays per version.
"""

from __future__ import annotations

from collections.abc import Iterable

import httpx2
from django.db import transaction

from corpus.httpguard import HostRefused
from corpus.models import AccessGroup, Project
from corpus.services.http_retrieval import host_policy
from goldset.errors import ServiceError
from judges.client import JudgeEndpoint
from judges.models import Judge, JudgePrompt
from judges.prompt import DEFAULT_PROMPT, prompt_problems
from labelling.services.guidelines import current_guideline

ENDPOINT_FIELDS = (
    "url",
    "template",
    "model",
    "api_key",
    "temperature",
    "seed",
    "timeout",
    "retries",
    "backoff",
    "concurrency",
)


def endpoint_of(judge: Judge) -> JudgeEndpoint:
    return JudgeEndpoint(**{name: getattr(judge, name) for name in ENDPOINT_FIELDS})


def check_endpoint(endpoint: JudgeEndpoint) -> None:
    """A ServiceError naming every problem of the endpoint, its host's included."""
    problems = endpoint.problems()
    if problems:
        raise ServiceError("The judge cannot be used: " + "; ".join(problems) + ".")
    try:
        host_policy().check_url(httpx2.URL(endpoint.url))
    except httpx2.InvalidURL as error:
        raise ServiceError(f"The judge's URL cannot be read: {error}.") from None
    except HostRefused as error:
        raise ServiceError(f"The judge cannot be called: {error}.") from None


def check_prompt(text: str) -> str:
    """The prompt as stored (line breaks as ``\n``: a browser's textarea sends ``\r\n``),
    or a ServiceError naming every problem."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    problems = prompt_problems(text)
    if problems:
        raise ServiceError("The prompt cannot be used: " + "; ".join(problems) + ".")
    return text


def _groups(project: Project, names: Iterable[str]) -> list[AccessGroup]:
    names = sorted({n.strip() for n in names if n.strip()})
    groups = list(AccessGroup.objects.filter(project=project, name__in=names))
    unknown = sorted(set(names) - {g.name for g in groups})
    if unknown:
        raise ServiceError(f"No access group named {', '.join(unknown)} in this project.")
    return groups


@transaction.atomic
def add_judge(
    *,
    project: Project,
    name: str,
    url: str,
    template: str = "openai",
    model: str = "",
    api_key: str = "",
    prompt: str = "",
    temperature: float = 0.0,
    seed: int | None = 0,
    groups: Iterable[str] | Iterable[AccessGroup] = (),
    user=None,
    **limits,
) -> Judge:
    """A new judge with prompt version 1 (the default prompt unless one is given)."""
    if Judge.objects.filter(project=project, name=name).exists():
        raise ServiceError(f"This project already has a judge named {name}.")
    judge = Judge(
        project=project,
        name=name,
        url=url.strip(),
        template=template,
        model=model.strip(),
        api_key=api_key.strip(),
        temperature=temperature,
        seed=seed,
        created_by=user,
        **limits,
    )
    check_endpoint(endpoint_of(judge))
    text = check_prompt(prompt or DEFAULT_PROMPT)
    judge.save()
    judge.access_groups.set(_access_groups(project, groups))
    JudgePrompt.objects.create(
        judge=judge, version=1, text=text, guideline=current_guideline(project)
    )
    return judge


@transaction.atomic
def change_judge(*, judge: Judge, prompt: str, groups=(), **fields) -> Judge:
    """Change a judge's endpoint, access groups and prompt (a changed prompt is a new
    version; an unchanged one keeps its version)."""
    for name, value in fields.items():
        if name in ENDPOINT_FIELDS:
            setattr(judge, name, value.strip() if isinstance(value, str) else value)
    check_endpoint(endpoint_of(judge))
    text = check_prompt(prompt)
    judge.save()
    judge.access_groups.set(_access_groups(judge.project, groups))
    _prompt_version(judge, text)
    return judge


def current_prompt(judge: Judge) -> JudgePrompt | None:
    """The prompt version judging uses now: the newest, unless the project's guideline has a
    new version since it was made; then a new prompt version with the same text and that
    guideline (a guideline edit starts a new calibration, as a prompt edit does)."""
    with transaction.atomic():
        # One new version at a time, however many jobs start together.
        Judge.objects.select_for_update().filter(pk=judge.pk).first()
        newest = judge.prompts.order_by("-version").first()
        if newest is None:
            return None
        return _prompt_version(judge, newest.text)


def _prompt_version(judge: Judge, text: str) -> JudgePrompt:
    """The newest prompt version if it has ``text`` and the current guideline, else a new one
    that has."""
    current = judge.prompts.select_related("guideline").order_by("-version").first()
    guideline = current_guideline(judge.project)
    guideline_id = guideline.pk if guideline else None
    if current is not None and current.text == text and current.guideline_id == guideline_id:
        return current
    version = (current.version if current else 0) + 1
    return JudgePrompt.objects.create(judge=judge, version=version, text=text, guideline=guideline)


def _access_groups(project: Project, groups) -> list[AccessGroup]:
    groups = list(groups)
    if all(isinstance(g, AccessGroup) for g in groups):
        if any(g.project_id != project.pk for g in groups):
            raise ServiceError("An access group of another project cannot be given.")
        return groups
    return _groups(project, groups)
