import logging
import os

from celery import Celery
from celery.signals import worker_init

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "goldset.settings")

app = Celery("goldset")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@worker_init.connect
def _give_way_when_asked(**_) -> None:
    """A worker started with GOLDSET_WORKER_PRIORITY=low (the index builds') lowers its CPU
    priority before its pool starts, so the pool and the encoder's threads inherit it."""
    from django.conf import settings

    if settings.GOLDSET_WORKER_PRIORITY == "low":
        from goldset.cpu_priority import give_way

        logging.getLogger(__name__).info("CPU priority lowered: %s", ", ".join(give_way()))
