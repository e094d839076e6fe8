"""The answer run upload, reference facts, answer grading and the answer review plan."""

from __future__ import annotations

from pathlib import PurePath

from django import forms
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.validators import ProhibitNullCharactersValidator
from django.template.defaultfilters import filesizeformat

from labelling.assignment_plan import DEFAULT_DOUBLE_SHARE
from labelling.forms import double_percent_field

User = get_user_model()


ANSWER_SUFFIXES = (".jsonl", ".json", ".txt")


class AnswerUploadForm(forms.Form):
    name = forms.SlugField(
        max_length=100,
        label="Answer run name",
        help_text="How the run is shown on the Answers page, e.g. rag-v3.",
    )
    file = forms.FileField(
        allow_empty_file=True,  # reported by the import as "holds no answers"
        help_text="JSONL, one line per question: question_id, answer, refused (required), "
        "sentences with citations (optional), context, system, version.",
    )

    def clean_file(self):
        upload = self.cleaned_data["file"]
        if PurePath(upload.name).suffix.lower() not in ANSWER_SUFFIXES:
            raise forms.ValidationError(f"{upload.name}: use a .jsonl file.")
        if upload.size > settings.GOLDSET_MAX_UPLOAD_BYTES:
            raise forms.ValidationError(
                f"{upload.name} is {filesizeformat(upload.size)}, over the "
                f"{filesizeformat(settings.GOLDSET_MAX_UPLOAD_BYTES)} limit."
            )
        return upload


class ReferenceFactForm(forms.Form):
    text = forms.CharField(
        required=False,
        max_length=1000,
        validators=[ProhibitNullCharactersValidator()],
        widget=forms.TextInput(attrs={"size": 80, "placeholder": "A fact a correct answer states"}),
    )
    vital = forms.TypedChoiceField(
        choices=[("1", "vital"), ("0", "okay")],
        coerce=lambda value: value == "1",
        initial="1",
        label="Importance",
    )
    # Gold spans of the question the fact rests on: the view offers them (`span_choices`).
    spans = forms.MultipleChoiceField(
        required=False, widget=forms.CheckboxSelectMultiple, label="Gold spans"
    )

    def __init__(self, *args, span_choices=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["spans"].choices = list(span_choices)


ReferenceFactFormSet = forms.formset_factory(ReferenceFactForm, extra=3, max_num=30)


class AnswerGradeForm(forms.Form):
    """One grade of the answer review: a claim's support, a citation's grade, a fact's
    presence, or the refused-wrongly mark."""

    KINDS = ("support", "citation", "fact", "refused")
    kind = forms.ChoiceField(choices=[(k, k) for k in KINDS])
    claim = forms.IntegerField(required=False, min_value=0)
    passage = forms.IntegerField(required=False, min_value=1)
    fact = forms.IntegerField(required=False, min_value=1)
    value = forms.CharField(max_length=10, required=False)  # an unticked box sends none

    def clean(self):
        data = super().clean()
        kind = data.get("kind")
        if kind in ("support", "citation") and data.get("claim") is None:
            raise forms.ValidationError("Which claim? Reload the page.")
        if kind == "citation":
            if data.get("passage") is None or data.get("value") not in ("0", "1", "2"):
                raise forms.ValidationError("A citation is graded 2, 1 or 0.")
            data["value"] = int(data["value"])
        if kind == "fact" and data.get("fact") is None:
            raise forms.ValidationError("Which fact? Reload the page.")
        if kind == "refused":
            data["value"] = data.get("value") == "1"
        return data


class AnswerReviewPlanForm(forms.Form):
    run = forms.ModelChoiceField(queryset=None, label="Answer run")
    # The passage plan's convention (`labelling.forms.PlanForm`): labellers ticked, the
    # double-labelled share in percent.
    labellers = forms.ModelMultipleChoiceField(
        queryset=None,
        label="Labellers",
        widget=forms.CheckboxSelectMultiple,
        help_text="Tick who reviews the answers (at least one).",
    )
    double_percent = double_percent_field(initial=int(DEFAULT_DOUBLE_SHARE * 100))

    def __init__(self, *args, question_set, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["run"].queryset = question_set.answer_runs.all()
        self.fields["labellers"].queryset = User.objects.filter(
            memberships__project_id=question_set.project_id, is_active=True
        ).order_by("username")
        self.fields["labellers"].label_from_instance = lambda u: u.get_username()
