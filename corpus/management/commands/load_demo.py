"""The demo project that `make run` starts with.

Safe to run again: it refreshes, never duplicates.
"""

import json
from dataclasses import replace
from datetime import datetime
from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.db import transaction

from corpus import services
from corpus.models import ChunkingScheme, Project, Role
from corpus.sources import read_folder

DEMO_DIR = Path(__file__).resolve().parents[2] / "demo"
# Demo accounts exist only in the demo project, never in a production install.
DEMO_USERS = [
    ("admin", "goldset-admin", Role.ADMIN),
    ("lead", "goldset-lead", Role.LEAD),
    ("labeller1", "goldset-labeller1", Role.LABELLER),
    ("labeller2", "goldset-labeller2", Role.LABELLER),
]
DEMO_GROUP_MEMBERS = {"hr-confidential": ["admin", "lead", "labeller1"]}
DEMO_SCHEMES = [
    {"name": "paragraphs", "strategy": "paragraph", "unit": "words", "size": 120, "overlap": 0},
    {"name": "fixed-80w", "strategy": "fixed", "unit": "words", "size": 80, "overlap": 20},
]


class Command(BaseCommand):
    help = "Create or refresh the demo project with its documents and demo accounts."

    def handle(self, *args, **options):
        with transaction.atomic():
            project = Project.objects.filter(slug="demo").first() or services.create_project(
                slug="demo", name="Northwind demo"
            )
            users = self._users(project)
            for spec in DEMO_SCHEMES:
                if not ChunkingScheme.objects.filter(project=project, name=spec["name"]).exists():
                    services.add_chunking_scheme(project=project, **spec)
            self._documents(project)
            for scheme in project.chunking_schemes.all():
                services.chunk_corpus(scheme=scheme)
            for group, names in DEMO_GROUP_MEMBERS.items():
                services.set_access_group_members(
                    project=project, name=group, users=[users[n] for n in names]
                )
        self.stdout.write(self.style.SUCCESS("Demo project 'demo' is ready. Log in as:"))
        for username, password, role in DEMO_USERS:
            self.stdout.write(f"  {username:<10} password {password:<20} ({role.label.lower()})")

    def _users(self, project):
        User = get_user_model()
        users = {}
        for username, password, role in DEMO_USERS:
            user, _ = User.objects.get_or_create(username=username)
            user.set_password(password)
            user.is_staff = user.is_superuser = role == Role.ADMIN
            user.save()
            services.add_member(project=project, user=user, role=role)
            users[username] = user
        return users

    def _documents(self, project):
        manifest = json.loads((DEMO_DIR / "manifest.json").read_text())
        restricted = manifest.get("restricted", {})
        modified = manifest.get("modified_at", {})
        for file, batch in read_folder(DEMO_DIR / "documents"):
            batch.records = [
                replace(
                    record,
                    access_groups=tuple(restricted.get(file.name, ())),
                    modified_at=datetime.fromisoformat(modified[file.name].replace("Z", "+00:00"))
                    if file.name in modified
                    else None,
                )
                for record in batch.records
            ]
            result = services.ingest_batch(project=project, batch=batch)
            for error in result.errors:
                self.stderr.write(f"demo: {error}")
