"""The banner that tells a project's leads a production sample is waiting for them."""

from django import template

from production.models import Sample

register = template.Library()


@register.inclusion_tag("production/_sample_banner.html", takes_context=True)
def sample_banner(context) -> dict:
    access, project = context.get("access"), context.get("project")
    if access is None or project is None or not access.is_lead:
        return {"samples": []}
    samples = (
        Sample.objects.filter(project=project, seen_at__isnull=True, question_set__isnull=False)
        .select_related("question_set")
        .order_by("-drawn_at")[:3]
    )
    # On a sample's own page its banner names it without a link: a banner never links to the
    # page it is on.
    shown = context.get("sample")
    return {
        "samples": list(samples),
        "project": project,
        "here": shown.pk if isinstance(shown, Sample) else None,
        "csrf_token": context.get("csrf_token"),
    }
