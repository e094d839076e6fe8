"""A gold set's download is refused to anyone an access group hides one of its documents from.
Gold sets finalised before issue 12 recorded only the documents of corpus.jsonl; this records
every document their bundle names anywhere (gold.jsonl's spans and judged passages,
judgements.csv's votes), read from the stored files themselves.

Self-contained on purpose: it reads the files as they were written then, whatever the code
that writes bundles becomes.
"""

import csv
import io
import json

from django.db import migrations

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def bundle_doc_ids(files: dict) -> set:
    doc_ids = set()
    for line in files.get("corpus.jsonl", b"").decode("utf-8").split("\n"):
        if line.strip():
            doc_ids.add(json.loads(line)["doc_id"])
    for line in files.get("gold.jsonl", b"").decode("utf-8").split("\n"):
        if line.strip():
            record = json.loads(line)
            doc_ids.update(span["doc_id"] for span in record.get("spans", []))
            doc_ids.update(passage["doc_id"] for passage in record.get("judged", []))
    rows = csv.DictReader(io.StringIO(files.get("judgements.csv", b"").decode("utf-8")))
    for row in rows:
        doc_id = row.get("doc_id") or ""
        if doc_id.startswith("'") and doc_id[1:].startswith(FORMULA_STARTS):
            doc_id = doc_id[1:]  # the bundle's spreadsheet escape
        if doc_id:
            doc_ids.add(doc_id)
    return doc_ids


def record_every_document(apps, schema_editor):
    GoldSet = apps.get_model("evaluation", "GoldSet")
    GoldSetFile = apps.get_model("evaluation", "GoldSetFile")
    Document = apps.get_model("corpus", "Document")
    for gold_set in GoldSet.objects.select_related("question_set").iterator():
        files = {
            name: bytes(content)
            for name, content in GoldSetFile.objects.filter(
                gold_set=gold_set, name__in=["corpus.jsonl", "gold.jsonl", "judgements.csv"]
            ).values_list("name", "content")
        }
        doc_ids = sorted(bundle_doc_ids(files))
        found = set()
        for start in range(0, len(doc_ids), 900):
            found.update(
                Document.objects.filter(
                    project_id=gold_set.question_set.project_id,
                    doc_id__in=doc_ids[start : start + 900],
                ).values_list("pk", flat=True)
            )
        gold_set.documents.add(*found)
        # A document deleted since counts as hidden (GoldSet.hidden_document_count).
        gold_set.document_count = max(gold_set.document_count, len(doc_ids))
        gold_set.save(update_fields=["document_count"])


class Migration(migrations.Migration):
    dependencies = [
        ("evaluation", "0002_issue16_permission_replay"),
        ("corpus", "0006_job_task"),
    ]

    operations = [migrations.RunPython(record_every_document, migrations.RunPython.noop)]
