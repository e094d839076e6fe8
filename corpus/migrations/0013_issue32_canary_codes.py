# Issue 32: a canary's retention code was its token reversed, so anyone who read its question
# knew the answer. Each stored code so derived is replaced by a random secret of the same length
# (offsets, and so chunks and spans, stay where they are), with the version's hash and its
# chunks' text hashes brought up to date. Rebuild the indexes, and give the team's own index the
# new text (`plant_canaries --out` wrote the old one).

import hashlib
import re
import secrets

from django.db import migrations

CODE = re.compile(r"The retention code for programme (\S+) is (\S+?),")


def new_code(length: int) -> str:
    return secrets.token_hex(length // 2 + 1)[:length]


def replace_codes(apps, schema_editor):
    Document = apps.get_model("corpus", "Document")
    DocumentVersion = apps.get_model("corpus", "DocumentVersion")
    Chunk = apps.get_model("corpus", "Chunk")
    canaries = Document.objects.filter(is_canary=True).values("pk")
    for version in DocumentVersion.objects.filter(document__in=canaries).order_by("pk"):
        text = version.text
        for found in list(CODE.finditer(text)):
            token, code = found.group(1), found.group(2)
            if code != token[::-1]:
                continue
            secret = new_code(len(code))
            text = text[: found.start(2)] + secret + text[found.end(2) :]
        if text == version.text:
            continue
        version.text = text
        version.content_hash = hashlib.sha256(text.encode("utf-8")).hexdigest()
        version.save(update_fields=["text", "content_hash"])
        for chunk in Chunk.objects.filter(version=version):
            digest = hashlib.blake2b(text[chunk.start : chunk.end].encode("utf-8"), digest_size=16)
            chunk.text_hash = digest.hexdigest()
            chunk.save(update_fields=["text_hash"])


class Migration(migrations.Migration):
    dependencies = [
        ("corpus", "0012_issue31_sessions_model_backend"),
    ]

    operations = [
        migrations.RunPython(replace_codes, migrations.RunPython.noop),
    ]
