"""The forms of labelling's pages: what a request may carry, checked before a service runs.

The grading writes (`GradeForm` ... `UndoForm`, plus `GradingPageForm` about the page itself)
answer a request from the grading page, which shows one message: `first_problem` is it. They
check the shape of the values only; the rules (note length, outcomes, the quote against the
stored text) are the services', so every caller gets the same messages.
"""

from __future__ import annotations

from pathlib import PurePath

from django import forms
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.validators import ProhibitNullCharactersValidator
from django.db.models import Q
from django.template.defaultfilters import filesizeformat
from django.utils import timezone

from corpus.models import AccessGroup, Retriever
from corpus.services.canaries import MAX_CANARIES
from goldeval.pooling import Strategy
from labelling.assignment_plan import DEFAULT_DOUBLE_SHARE
from labelling.models import Pool, PoolState, QuestionSet, VerdictOutcome
from labelling.services.calibration import MAX_SHARE_PERCENT as MAX_CALIBRATION_PERCENT
from labelling.services.guidelines import MAX_GUIDELINE_CHARS
from labelling.services.judgements import GRADES, clamp_seconds
from labelling.services.pools import MAX_DEPTH
from labelling.services.questions import canary_set_problem
from labelling.services.recheck import OUTCOMES as RECHECK_OUTCOMES

User = get_user_model()

# Question sets and pools -------------------------------------------------------------------

FORMAT_OF_SUFFIX = {".csv": "csv", ".jsonl": "jsonl", ".txt": "lines"}


class PlantCanariesForm(forms.Form):
    """The options of `manage.py plant_canaries`, with its checks (the service's own)."""

    group = forms.ModelChoiceField(
        queryset=AccessGroup.objects.none(),
        to_field_name="name",
        label="Access group",
        help_text="Only its members may read the canaries; a replay must never show them to "
        "anyone else.",
    )
    count = forms.IntegerField(
        min_value=1,
        max_value=MAX_CANARIES,
        initial=3,
        label="How many",
        help_text=f"1 to {MAX_CANARIES} canary documents, each with a question of its own.",
    )
    set_name = forms.SlugField(
        max_length=100,
        initial="canaries",
        label="Question set",
        help_text="Their questions go to this set: new, or a canary set already (never a set of "
        "the team's questions).",
    )

    def __init__(self, *args, project, **kwargs):
        super().__init__(*args, **kwargs)
        self.project = project
        self.fields["group"].queryset = project.access_groups.order_by("name")
        self.fields["group"].empty_label = None

    def clean_set_name(self) -> str:
        set_name = self.cleaned_data["set_name"]
        problem = canary_set_problem(project=self.project, set_name=set_name)
        if problem:
            raise forms.ValidationError(problem)
        return set_name


class QuestionImportForm(forms.Form):
    set_name = forms.SlugField(
        max_length=100,
        label="Question set",
        help_text="An existing set adds the new questions; a new name creates the set.",
    )
    file = forms.FileField(
        required=False,
        allow_empty_file=True,  # reported by the import as "has no questions"
        help_text="CSV with a question (or text) column and optional id, source, tags; JSONL "
        "with question (or text) and optional id, source, tags; or .txt, one question a line.",
    )
    # strip=False: a question is stored exactly as typed, spaces included.
    pasted = forms.CharField(
        required=False,
        strip=False,
        label="…or paste questions, one per line",
        widget=forms.Textarea(attrs={"rows": 8}),
    )
    source = forms.CharField(
        required=False,
        max_length=200,
        help_text="Where these questions come from (e.g. helpdesk-tickets), unless a row says.",
    )

    def clean(self):
        data = super().clean()
        upload, pasted = data.get("file"), data.get("pasted") or ""
        if upload and pasted.strip():
            raise forms.ValidationError("Upload a file or paste questions, not both.")
        if not upload and not pasted.strip():
            raise forms.ValidationError("Upload a file or paste at least one question.")
        if upload:
            suffix = PurePath(upload.name).suffix.lower()
            if suffix not in FORMAT_OF_SUFFIX:
                raise forms.ValidationError(
                    f"{upload.name}: use a .csv, .jsonl or .txt file.", code="unsupported"
                )
            if upload.size > settings.GOLDSET_MAX_UPLOAD_BYTES:
                raise forms.ValidationError(
                    f"{upload.name} is {filesizeformat(upload.size)}, over the "
                    f"{filesizeformat(settings.GOLDSET_MAX_UPLOAD_BYTES)} limit.",
                    code="too_large",
                )
            data["format"] = FORMAT_OF_SUFFIX[suffix]
        else:
            data["format"] = "lines"
        return data


class PoolForm(forms.Form):
    question_set = forms.ModelChoiceField(queryset=QuestionSet.objects.none(), empty_label=None)
    name = forms.SlugField(max_length=100, help_text="Lower-case letters, digits, - and _.")
    retrievers = forms.ModelMultipleChoiceField(
        queryset=Retriever.objects.none(),
        widget=forms.CheckboxSelectMultiple,
        help_text="Several kinds give labellers a varied set: BM25, an embedding model and "
        "your own system's run.",
    )
    depth = forms.IntegerField(
        min_value=1,
        max_value=MAX_DEPTH,
        initial=10,
        help_text="Each retriever's top k per question goes into the pool.",
    )
    strategy = forms.ChoiceField(
        label="Judging order",
        choices=[(s.value, s.label) for s in Strategy],
        initial=Strategy.DEPTH.value,
        required=False,  # a form posted without it (a script, an older page) pools depth-k
        help_text="Depth-k shows a question's candidates shuffled. The adaptive orders show "
        "first what is most likely relevant given the judgements so far (move-to-front, or a "
        "bandit over the retrievers); labellers see no retriever, rank or score either way.",
    )
    stop_misses = forms.IntegerField(
        label="Stop after this many not relevant in a row",
        min_value=1,
        max_value=MAX_DEPTH * 10,
        required=False,
        help_text="Empty: every candidate waits for a grade. Set, a labeller may give the "
        "verdict once that many grades in a row were 0; the rest stay for a full pass.",
    )
    stop_budget = forms.IntegerField(
        label="Or after this many judgements of a question",
        min_value=1,
        max_value=MAX_DEPTH * 10,
        required=False,
        help_text="Empty: no budget per question.",
    )

    def __init__(self, *args, project, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["question_set"].queryset = project.question_sets.content()
        self.fields["retrievers"].queryset = project.retrievers.all()

    def clean_strategy(self) -> str:
        return self.cleaned_data["strategy"] or Strategy.DEPTH.value


# Assignments and the guideline ---------------------------------------------------------------


def pool_label(pool: Pool) -> str:
    """A pool in a choice list: pool names are unique within a question set only, so the
    set is named too."""
    return f"{pool.name} — {pool.question_set.name}"


def double_percent_field(**options) -> forms.IntegerField:
    """The double-labelled share in percent, as every plan form asks for it (passages and
    answers alike)."""
    return forms.IntegerField(
        label="Double-labelled share (%)", min_value=0, max_value=100, **options
    )


class PlanForm(forms.Form):
    pool = forms.ModelChoiceField(queryset=Pool.objects.none(), empty_label=None)
    labellers = forms.ModelMultipleChoiceField(
        queryset=User.objects.none(),
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="Leave all unticked to let labellers claim questions with “Next question”.",
    )
    double_percent = double_percent_field(initial=int(DEFAULT_DOUBLE_SHARE * 100))
    double_count = forms.IntegerField(
        label="…or this many questions",
        min_value=0,
        required=False,
        help_text="An absolute number (such as 30) wins over the share.",
    )
    seed = forms.IntegerField(
        initial=0, help_text="The same seed gives the same plan.", min_value=0, max_value=2**31
    )

    def __init__(self, *args, project, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["pool"].queryset = Pool.objects.filter(
            question_set__project=project, state=PoolState.READY
        ).select_related("question_set")
        self.fields["pool"].label_from_instance = pool_label
        self.fields["labellers"].queryset = project.members()
        self.fields["labellers"].label_from_instance = lambda u: u.get_username()


class CalibrationShareForm(forms.Form):
    percent = forms.IntegerField(
        label="Calibration share (%)",
        min_value=0,
        max_value=MAX_CALIBRATION_PERCENT,
        help_text="Of the questions a labeller asks for while real work waits for them, this "
        "share are decided questions they have not labelled, answered blind. 0 switches it off.",
    )


class ReassignForm(forms.Form):
    labeller = forms.ModelChoiceField(queryset=User.objects.none(), empty_label=None)

    def __init__(self, *args, project, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["labeller"].queryset = project.members()


ASSIGNMENT_STATUSES = [
    ("", "any status"),
    ("not_started", "not started"),
    ("started", "started"),
    ("done", "done"),
    ("unclaimed", "unclaimed"),
    ("stale", "stale (lease ran out, started)"),
]
ASSIGNMENT_SORTS = {
    "question": ("question_id", "slot"),
    "labeller": ("labeller__username", "question_id", "slot"),
    "status": ("completed_at", "-graded", "question_id", "slot"),
    "graded": ("-graded", "question_id", "slot"),
    "assigned": ("-assigned_at", "question_id", "slot"),
}


class AssignmentFilterForm(forms.Form):
    """The Assignments list's filters, sort and search (a GET form: bad values are ignored)."""

    labeller = forms.ChoiceField(required=False)
    status = forms.ChoiceField(required=False, choices=ASSIGNMENT_STATUSES)
    slot = forms.ChoiceField(
        required=False, choices=[("", "any slot"), ("1", "first"), ("2", "second"), ("3", "third")]
    )
    q = forms.CharField(required=False, max_length=200, label="Search")
    sort = forms.ChoiceField(
        required=False,
        choices=[
            ("question", "question"),
            ("labeller", "labeller"),
            ("status", "status"),
            ("graded", "most graded"),
            ("assigned", "newest assigned"),
        ],
    )

    def __init__(self, *args, project, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["labeller"].choices = [("", "anyone")] + [
            (str(u.pk), u.get_username()) for u in project.members()
        ]

    def apply(self, assignments):
        """``assignments`` (annotated by `with_progress`) filtered, searched and sorted."""
        if not self.is_valid():
            return assignments.order_by(*ASSIGNMENT_SORTS["question"])
        data = self.cleaned_data
        if data["labeller"]:
            assignments = assignments.filter(labeller_id=data["labeller"])
        status = data["status"]
        if status == "unclaimed":
            assignments = assignments.filter(labeller__isnull=True)
        elif status == "done":
            assignments = assignments.filter(completed_at__isnull=False)
        elif status == "started":
            assignments = assignments.filter(completed_at__isnull=True).filter(
                Q(graded__gt=0) | Q(has_verdict=True)
            )
        elif status == "not_started":
            assignments = assignments.filter(completed_at__isnull=True, graded=0, has_verdict=False)
        elif status == "stale":
            # Work the viewer can see, on a claimed question whose lease ran out.
            assignments = assignments.filter(
                labeller__isnull=False, lease_expires_at__lt=timezone.now()
            ).filter(Q(graded__gt=0) | Q(has_verdict=True))
        if data["slot"]:
            assignments = assignments.filter(slot=int(data["slot"]))
        if data["q"].strip():
            text = data["q"].strip()
            assignments = assignments.filter(
                Q(question__external_id__icontains=text) | Q(question__text__icontains=text)
            )
        return assignments.order_by(*ASSIGNMENT_SORTS[data["sort"] or "question"])


MAX_LEASE_MINUTES = 7 * 24 * 60


class LeaseForm(forms.Form):
    """How long a question a labeller claims stays theirs without activity (blank or 0: no
    limit)."""

    lease_minutes = forms.IntegerField(
        required=False,
        min_value=0,
        max_value=MAX_LEASE_MINUTES,
        label="Claimed questions stay their labeller's for (minutes)",
        help_text="Renewed by every visit and grade. Blank or 0: no limit.",
        error_messages={
            "min_value": "Give a number of minutes, 0 or more (0: no limit).",
            "max_value": f"At most {MAX_LEASE_MINUTES:,} minutes (a week).",
            "invalid": "Give a whole number of minutes (0: no limit).",
        },
    )

    def first_problem(self) -> str:
        return next(iter(self.errors.values()))[0]


class BulkReassignForm(forms.Form):
    """Selected assignments of one pool, moved to a member (or back to the open slots)."""

    assignment = forms.TypedMultipleChoiceField(coerce=int, choices=[])
    to = forms.ChoiceField(choices=[])

    def __init__(self, *args, project, assignment_ids, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["assignment"].choices = [(pk, pk) for pk in assignment_ids]
        self.fields["assignment"].error_messages["required"] = "Tick the assignments to move."
        self.fields["assignment"].error_messages["invalid_choice"] = (
            "An assignment you ticked is not in this pool any more; reload the page."
        )
        self.fields["to"].choices = [("unassign", "nobody (back to the open slots)")] + [
            (str(u.pk), u.get_username()) for u in project.members()
        ]
        self.fields["to"].error_messages["invalid_choice"] = (
            "Choose a member of this project to move the assignments to."
        )

    def first_problem(self) -> str:
        return next(iter(self.errors.values()))[0]


class SecondLabellersForm(forms.Form):
    """Raise a planned pool's double-labelled share."""

    pool = forms.ModelChoiceField(queryset=Pool.objects.none(), empty_label=None)
    labellers = forms.ModelMultipleChoiceField(
        queryset=User.objects.none(),
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="Leave all unticked to leave the new second slots for “Next question”.",
    )
    double_percent = double_percent_field(required=False)
    double_count = forms.IntegerField(
        label="…or this many questions in all", min_value=0, required=False
    )
    seed = forms.IntegerField(initial=0, min_value=0, max_value=2**31)

    def __init__(self, *args, project, **kwargs):
        # Shown beside PlanForm, whose fields have the same names: ids of its own, so clicking
        # a label here never ticks a box there (the posted names stay the same).
        kwargs.setdefault("auto_id", "id_second_%s")
        super().__init__(*args, **kwargs)
        self.fields["pool"].queryset = (
            Pool.objects.filter(
                question_set__project=project, state=PoolState.READY, assignments__isnull=False
            )
            .select_related("question_set")
            .distinct()
        )
        self.fields["pool"].label_from_instance = pool_label
        self.fields["labellers"].queryset = project.members()
        self.fields["labellers"].label_from_instance = lambda u: u.get_username()

    def clean(self):
        data = super().clean()
        if data.get("double_percent") is None and data.get("double_count") is None:
            raise forms.ValidationError("Give the double-labelled share or a number of questions.")
        return data


class ExcludeQuestionForm(forms.Form):
    reason = forms.CharField(required=False, max_length=500, strip=True)

    def first_problem(self) -> str:
        return next(iter(self.errors.values()))[0]


class GuidelineForm(forms.Form):
    text = forms.CharField(
        label="Guideline (Markdown)",
        widget=forms.Textarea(attrs={"rows": 24}),
        max_length=MAX_GUIDELINE_CHARS,
        strip=False,
    )


# Grading writes ------------------------------------------------------------------------------


class WholeNumberField(forms.Field):
    """A whole number as Python's int() reads it; anything else (blank, "1.0") is refused with
    the message the grading page has always shown."""

    def __init__(self, *, meaning: str, **kwargs):
        message = f"The {meaning} must be a whole number."
        super().__init__(error_messages={"required": message, "invalid": message}, **kwargs)

    def to_python(self, value) -> int:
        try:
            return int(value)
        except (TypeError, ValueError):
            raise forms.ValidationError(self.error_messages["invalid"], code="invalid")


class SecondsField(forms.Field):
    """Seconds the page measured: never a reason to refuse a write, so odd values count as 0."""

    def __init__(self, **kwargs):
        super().__init__(required=False, **kwargs)

    def to_python(self, value) -> float:
        return clamp_seconds(value)


class TextAsSentField(forms.CharField):
    """Text passed on as sent, blank when missing; the service decides what is acceptable.

    ``stored`` text (a note, a reason) is written as typed, so a NUL character, which no
    database column holds, is refused here with ``what`` named; a quote is checked against the
    stored text by the service, whose message is the clearer one."""

    def __init__(self, *, stored: str = "", **kwargs):
        super().__init__(required=False, strip=False, **kwargs)
        self.validators = [
            v for v in self.validators if not isinstance(v, ProhibitNullCharactersValidator)
        ]
        if stored:
            self.validators.append(
                ProhibitNullCharactersValidator(
                    message=f"{stored} cannot contain a NUL character (U+0000); remove it."
                )
            )


class OptionalWholeNumberField(WholeNumberField):
    """A whole number of 0 or more, or None when missing or blank."""

    def __init__(self, *, meaning: str, **kwargs):
        super().__init__(meaning=meaning, required=False, **kwargs)

    def to_python(self, value) -> int | None:
        if value in (None, ""):
            return None
        number = super().to_python(value)
        if number < 0:
            raise forms.ValidationError(self.error_messages["invalid"], code="invalid")
        return number


class PassageIdsField(forms.CharField):
    """Passage (candidate) ids, comma-separated; anything else in the list is ignored."""

    def __init__(self, **kwargs):
        super().__init__(required=False, max_length=2000, **kwargs)

    def to_python(self, value) -> frozenset[int]:
        text = super().to_python(value)
        return frozenset(int(part) for part in text.split(",") if part.strip().isdigit())


class GradingPageForm(forms.Form):
    """What every grading write says about the page that sent it (not passed to services):
    the account the page was opened for, and the passages whose whole document it shows."""

    labeller = OptionalWholeNumberField(meaning="account of this page")
    whole = PassageIdsField()


class GradingWriteForm(forms.Form):
    # The guideline version the page showed (0: it showed none); missing means the current one.
    guideline = OptionalWholeNumberField(meaning="guideline version")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # Checked after the fields the labeller acted on, whose problems say more.
        self.order_fields([name for name in self.fields if name != "guideline"])

    def first_problem(self) -> str:
        """The first problem in field order (the page shows one message at a time)."""
        return next(iter(self.errors.values()))[0]


GRADE_MESSAGE = "A grade is 0 (not relevant), 1 (partly answers) or 2 (fully answers)."


class GradeForm(GradingWriteForm):
    grade = forms.TypedChoiceField(
        choices=list(GRADES.items()),
        coerce=int,
        error_messages={"required": GRADE_MESSAGE, "invalid_choice": GRADE_MESSAGE},
    )
    revision = WholeNumberField(meaning="revision")
    seconds = SecondsField()


class NoteForm(GradingWriteForm):
    note = TextAsSentField(stored="A note")
    revision = WholeNumberField(meaning="revision")
    seconds = SecondsField()


class SpanForm(GradingWriteForm):
    """Evidence selected in a passage: offsets into the version text, and the selected text."""

    version = WholeNumberField(meaning="document version")
    start = WholeNumberField(meaning="span start")
    end = WholeNumberField(meaning="span end")
    quote = TextAsSentField()
    revision = WholeNumberField(meaning="revision")
    seconds = SecondsField()


class RevisionForm(GradingWriteForm):
    """A write that carries only the revision it was made against (removing a span)."""

    revision = WholeNumberField(meaning="revision")


class VerdictForm(GradingWriteForm):
    outcome = TextAsSentField()
    reason = TextAsSentField(stored="A reason")
    revision = WholeNumberField(meaning="revision")


class UndoForm(GradingWriteForm):
    """Undo carries only the guideline version the page showed."""


# Adjudication --------------------------------------------------------------------------------


class ResolveItemForm(forms.Form):
    grade = forms.TypedChoiceField(
        choices=[(0, "0 — not relevant"), (1, "1 — partially answers"), (2, "2 — fully answers")],
        coerce=int,
        widget=forms.RadioSelect,
    )
    spans_from = forms.ChoiceField(
        choices=[
            ("both", "Both labellers' spans (union)"),
            ("a", "First labeller's"),
            ("b", "Second labeller's"),
            ("c", "Third labeller's (an escalated passage)"),
            ("candidate", "The candidate passage"),
            ("custom", "The spans chosen here (a selection or offsets)"),
        ],
        initial="both",
    )
    custom_spans = forms.CharField(
        required=False, help_text="start-end pairs, e.g. 120-410, 500-620"
    )
    note = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3}))

    def clean_custom_spans(self):
        raw = self.cleaned_data["custom_spans"].strip()
        spans = []
        for part in filter(None, (p.strip() for p in raw.replace(";", ",").split(","))):
            left, _, right = part.partition("-")
            if not (left.strip().isdigit() and right.strip().isdigit()):
                raise forms.ValidationError(f"{part!r} is not start-end.")
            spans.append((int(left), int(right)))
        return spans


class ResolveVerdictForm(forms.Form):
    outcome = forms.ChoiceField(choices=VerdictOutcome.choices[:2], widget=forms.RadioSelect)
    note = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3}))


# Answer runs and reference answers (issue 15) -----------------------------------------------


class RecheckForm(forms.Form):
    """A labeller's answer for their span on a changed document (the Re-check page)."""

    outcome = forms.ChoiceField(
        choices=[(o, o) for o in RECHECK_OUTCOMES],
        error_messages={
            "required": "Choose: confirm, mark again, or the evidence is gone.",
            "invalid_choice": "Choose: confirm, mark again, or the evidence is gone.",
        },
    )
    start = OptionalWholeNumberField(meaning="start of the selection")
    end = OptionalWholeNumberField(meaning="end of the selection")
    quote = TextAsSentField()

    def first_problem(self) -> str:
        return next(iter(self.errors.values()))[0]
