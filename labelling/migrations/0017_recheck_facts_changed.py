"""Confirming a re-checked span whose words changed ("40 percent" is now "50 percent") is
recorded as "facts_changed", apart from "confirmed" (it only moved): answers stored before
are told apart here by the same word comparison (`goldeval.text.worddiff.outcome`)."""

from django.db import migrations

from goldeval.text.worddiff import FACTS_CHANGED, outcome


def tell_facts_changed(apps, schema_editor):
    SpanRecheck = apps.get_model("labelling", "SpanRecheck")
    changed = [
        answer.pk
        for answer in SpanRecheck.objects.filter(outcome="confirmed").select_related("span")
        if outcome(answer.span.quote, answer.quote) == FACTS_CHANGED
    ]
    SpanRecheck.objects.filter(pk__in=changed).update(outcome=FACTS_CHANGED)


def back_to_confirmed(apps, schema_editor):
    SpanRecheck = apps.get_model("labelling", "SpanRecheck")
    SpanRecheck.objects.filter(outcome=FACTS_CHANGED).update(outcome="confirmed")


class Migration(migrations.Migration):
    dependencies = [("labelling", "0016_pool_judging_order")]

    operations = [migrations.RunPython(tell_facts_changed, back_to_confirmed)]
