"""Health reports are metadata only here: a report names documents an access group may hide."""

from django.contrib import admin

from goldset.admin import ReadOnlyAdmin
from health.models import (
    IndexHealthCheck,
    IndexHealthReport,
    IndexHealthThresholds,
    IndexManifest,
    IndexManifestRow,
    ManifestSource,
)


@admin.register(ManifestSource)
class ManifestSourceAdmin(ReadOnlyAdmin):
    """Set on Index health or with `manage.py set_manifest_source`, where the URL and headers
    are checked; read-only here so nothing skips those checks."""

    list_display = ["retriever", "url", "timeout", "changed_by", "changed_at"]


@admin.register(IndexManifest)
class IndexManifestAdmin(admin.ModelAdmin):
    list_display = ["pk", "retriever", "file_name", "rows", "uploaded_by", "uploaded_at"]
    readonly_fields = ["sha256", "rows", "uploaded_at"]


@admin.register(IndexManifestRow)
class IndexManifestRowAdmin(admin.ModelAdmin):
    list_display = ["manifest", "line", "doc_id", "version", "embedding_model", "indexed_at"]
    list_filter = ["embedding_model"]
    raw_id_fields = ["manifest"]


@admin.register(IndexHealthThresholds)
class IndexHealthThresholdsAdmin(admin.ModelAdmin):
    list_display = ["project", "max_stale", "max_lag_days", "fail_on_model_mix", "max_crowding"]


@admin.register(IndexHealthCheck)
class IndexHealthCheckAdmin(ReadOnlyAdmin):
    list_display = ["retriever", "checked_at", "stale_share", "lag_oldest_days", "notified"]
    list_filter = ["project"]
    fields = [
        "project",
        "retriever",
        "checked_at",
        "source",
        "stale_share",
        "lag_p95_days",
        "lag_oldest_days",
        "mixed_models",
        "crossed",
        "notified",
    ]
    readonly_fields = fields


@admin.register(IndexHealthReport)
class IndexHealthReportAdmin(ReadOnlyAdmin):
    """Metadata only: the report names documents an access group may hide."""

    list_display = ["retriever", "key", "source", "created_at"]
    fields = list_display
    readonly_fields = fields
