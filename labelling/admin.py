from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin

from corpus import one_time_passwords
from labelling.models import (
    Assignment,
    CalibrationShare,
    Candidate,
    Change,
    EscalatedItem,
    Guideline,
    ImportedJudgement,
    ItemState,
    ItemStateStale,
    Judgement,
    Pool,
    PoolHit,
    Provenance,
    Question,
    QuestionSet,
    Resolution,
    RunResult,
    Span,
    SpanRecheck,
    Verdict,
)
from labelling.services import assignments as services


@admin.register(QuestionSet)
class QuestionSetAdmin(admin.ModelAdmin):
    list_display = ["name", "project", "created_at"]


@admin.register(Question)
class QuestionAdmin(admin.ModelAdmin):
    list_display = ["external_id", "question_set", "text"]
    search_fields = ["external_id", "text"]
    raw_id_fields = ["duplicate_of"]


@admin.register(ImportedJudgement)
class ImportedJudgementAdmin(admin.ModelAdmin):
    list_display = ["question", "document", "grade", "source"]
    raw_id_fields = ["question", "document"]


@admin.register(Pool)
class PoolAdmin(admin.ModelAdmin):
    list_display = ["name", "question_set", "depth", "state", "created_at"]
    raw_id_fields = ["job"]


class ProvenanceInline(admin.TabularInline):
    model = Provenance
    extra = 0
    raw_id_fields = ["retriever"]


@admin.register(Candidate)
class CandidateAdmin(admin.ModelAdmin):
    list_display = ["pk", "pool", "question", "version", "start", "end", "shuffle_rank"]
    raw_id_fields = ["pool", "question", "version"]
    inlines = [ProvenanceInline]


@admin.register(Guideline)
class GuidelineAdmin(admin.ModelAdmin):
    list_display = ["project", "version", "created_by", "created_at"]


@admin.register(Assignment)
class AssignmentAdmin(admin.ModelAdmin):
    """Started work (a judgement or a verdict in it) is never handed to someone else, nor
    deleted with its grades: the same rule as the lead's Assignments page."""

    list_display = ["pool", "question", "slot", "labeller", "assigned_at", "completed_at"]
    raw_id_fields = ["pool", "question", "labeller"]

    def _started(self, obj) -> bool:
        return obj is not None and Assignment.objects.started().filter(pk=obj.pk).exists()

    def get_readonly_fields(self, request, obj=None):
        if self._started(obj):
            return ["pool", "question", "slot", "labeller"]
        return super().get_readonly_fields(request, obj)

    def has_delete_permission(self, request, obj=None):
        return not self._started(obj) and super().has_delete_permission(request, obj)


class SpanInline(admin.TabularInline):
    model = Span
    extra = 0
    raw_id_fields = ["version", "resolution"]


@admin.register(Judgement)
class JudgementAdmin(admin.ModelAdmin):
    list_display = ["assignment", "candidate", "grade", "revision", "updated_at"]
    raw_id_fields = ["assignment", "candidate", "guideline"]
    inlines = [SpanInline]


@admin.register(Verdict)
class VerdictAdmin(admin.ModelAdmin):
    list_display = ["assignment", "outcome", "revision", "updated_at"]
    raw_id_fields = ["assignment", "guideline"]


@admin.register(Resolution)
class ResolutionAdmin(admin.ModelAdmin):
    list_display = [
        "pool",
        "question",
        "candidate",
        "grade",
        "outcome",
        "resolved_by",
        "resolved_at",
    ]
    raw_id_fields = ["pool", "question", "candidate"]


@admin.register(Span)
class SpanAdmin(admin.ModelAdmin):
    list_display = ["version", "start", "end", "judgement", "resolution"]
    raw_id_fields = ["version", "judgement", "resolution"]


@admin.register(SpanRecheck)
class SpanRecheckAdmin(admin.ModelAdmin):
    """Readable, never editable (its history is in `Change`); the quote, document text that the
    admin would show past every access group, is left out."""

    list_display = ["span", "outcome", "version", "start", "end", "made_by", "made_at"]
    fields = ["span", "outcome", "version", "start", "end", "made_by", "made_at"]
    readonly_fields = fields

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(Change)
class ChangeAdmin(admin.ModelAdmin):
    """Append-only history: readable, never editable."""

    list_display = ["assignment", "action", "made_by", "made_at"]
    raw_id_fields = ["assignment", "candidate"]

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(RunResult)
class RunResultAdmin(admin.ModelAdmin):
    list_display = ["retriever", "question", "rank", "score", "version", "start", "end"]
    raw_id_fields = ["question", "version"]


@admin.register(PoolHit)
class PoolHitAdmin(admin.ModelAdmin):
    list_display = ["pool", "question", "retriever", "rank", "score"]
    raw_id_fields = ["pool", "question", "version"]


@admin.register(Provenance)
class ProvenanceAdmin(admin.ModelAdmin):
    list_display = ["candidate", "retriever", "rank", "score"]
    raw_id_fields = ["candidate"]


User = get_user_model()


@admin.register(CalibrationShare)
class CalibrationShareAdmin(admin.ModelAdmin):
    list_display = ["project", "percent", "updated_by", "updated_at"]


class DerivedRowAdmin(admin.ModelAdmin):
    """Rows the app derives from the votes (`labelling.services.gold_state`): shown for
    inspection, never added or edited here (a stale mark is how they are corrected)."""

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


@admin.register(ItemState)
class ItemStateAdmin(DerivedRowAdmin):
    list_display = ["pk", "pool", "question", "candidate", "kind", "resolved", "distance"]
    raw_id_fields = ["pool", "question", "candidate", "document"]


@admin.register(EscalatedItem)
class EscalatedItemAdmin(DerivedRowAdmin):
    """Written by the grading write that escalates (`labelling.services.escalation`); the
    third slot and the votes depend on it."""

    list_display = ["pk", "pool", "question", "candidate", "assignment", "grades"]
    raw_id_fields = ["pool", "question", "candidate", "assignment"]


@admin.register(ItemStateStale)
class ItemStateStaleAdmin(DerivedRowAdmin):
    list_display = ["pk", "pool", "question"]
    raw_id_fields = ["pool", "question"]


admin.site.unregister(User)


@admin.register(User)
class AccountAdmin(UserAdmin):
    """People with labelling work are deactivated, never deleted (the database refuses it:
    their assignments, history, resolutions and guidelines PROTECT them). Deactivating
    someone gives their not-yet-started assignments back to the pool; started ones stay
    theirs."""

    actions = ["deactivate"]

    @admin.action(description="Deactivate the selected accounts (their work is kept)")
    def deactivate(self, request, queryset):
        for user in queryset.filter(is_active=True):
            user.is_active = False
            user.save(update_fields=["is_active"])
            released = _release_unstarted(user, by=request.user)
            self.message_user(
                request,
                f"{user.get_username()} is deactivated"
                + (
                    f"; {released} unstarted assignment(s) went back to the pool."
                    if released
                    else "."
                ),
            )

    def save_model(self, request, obj, form, change):
        was_active = change and User.objects.filter(pk=obj.pk, is_active=True).exists()
        super().save_model(request, obj, form, change)
        if not change:
            # A password typed here for someone else is a one-time password.
            one_time_passwords.require_change(obj)
        if was_active and not obj.is_active:
            released = _release_unstarted(obj, by=request.user)
            if released:
                self.message_user(
                    request, f"{released} unstarted assignment(s) went back to the pool."
                )

    def user_change_password(self, request, id, form_url=""):
        """A password an admin sets here for someone else is one-time, as on the members page;
        one set for their own account is not."""
        response = super().user_change_password(request, id, form_url)
        if request.method == "POST" and response.status_code == 302:
            user = self.get_object(request, id)
            if user is not None and user.pk != request.user.pk:
                one_time_passwords.require_change(user)
        return response

    def delete_view(self, request, object_id, extra_context=None):
        user = self.get_object(request, object_id)
        if user is not None and _has_work(user):
            messages.warning(
                request,
                f"{user.get_username()} has labelling work, which must stay theirs: deactivate "
                "the account instead (untick Active, or the Deactivate action).",
            )
        return super().delete_view(request, object_id, extra_context)


def _has_work(user) -> bool:
    return (
        Assignment.objects.filter(labeller=user).exists()
        or Change.objects.filter(made_by=user).exists()
        or Resolution.objects.filter(resolved_by=user).exists()
        or Guideline.objects.filter(created_by=user).exists()
    )


def _release_unstarted(user, *, by) -> int:
    """Give the user's claimed but not started assignments back to the pool."""
    released = 0
    unstarted = Assignment.objects.open_for(user).exclude(
        pk__in=Assignment.objects.started().values("pk")
    )
    # A calibration question is nobody's slot to give back: an unstarted one simply goes.
    unstarted.calibration().delete()
    for assignment in unstarted.work():
        try:
            services.unassign(assignment=assignment, user=by)
        except services.AssignmentError:
            continue  # started meanwhile: it stays theirs
        released += 1
    return released
