"""Forms of the production loop's pages: API tokens, sampling rules, and promotion into a
gold set."""

from __future__ import annotations

from django import forms

from corpus.models import Retriever, RetrieverKind
from goldset.errors import ServiceError
from labelling.models import QuestionSet
from production.models import Sample, SamplingStrategy
from production.services.sampling import STRATA, check_rule


class ApiTokenForm(forms.Form):
    name = forms.CharField(
        max_length=100, help_text="What sends traces with it, e.g. “support-bot production”."
    )
    expires_in_days = forms.IntegerField(
        required=False,
        min_value=1,
        max_value=3650,
        label="Expires after (days)",
        help_text="Leave empty for a token that lasts until revoked.",
    )


class SamplingRuleForm(forms.Form):
    """A sampling rule as a lead writes it; saving a changed rule makes its next version."""

    name = forms.SlugField(
        max_length=100, help_text="Saving under an existing name adds a version."
    )
    strategy = forms.ChoiceField(choices=SamplingStrategy.choices)
    size = forms.IntegerField(min_value=1, max_value=100_000, initial=50)
    seed = forms.IntegerField(initial=0, help_text="The same seed draws the same sample again.")
    window_days = forms.IntegerField(
        min_value=1, max_value=366, initial=7, label="Time window (days up to the draw)"
    )
    feedback = forms.ChoiceField(
        required=False,
        choices=[
            ("", "any or none"),
            ("down", "negative"),
            ("up", "positive"),
            ("none", "no feedback"),
            ("any", "some feedback"),
        ],
    )
    refused = forms.ChoiceField(
        required=False, choices=[("", "refused or not"), ("yes", "refused"), ("no", "answered")]
    )
    no_citation = forms.BooleanField(required=False, label="Only answers without a citation")
    top_score_below = forms.FloatField(required=False, label="Only a top score below")
    user_group = forms.CharField(required=False, max_length=200, label="Only users of the group")
    system_version = forms.CharField(required=False, max_length=200)
    stratify_by = forms.ChoiceField(
        required=False, choices=[("", "—")] + list(STRATA.items()), label="Strata (stratified)"
    )
    quotas = forms.CharField(
        required=False,
        max_length=2000,
        help_text="Stratified: stratum=count, comma-separated (down=20, up=10). "
        "Empty: the size shared in proportion.",
    )
    retrievers = forms.ModelMultipleChoiceField(
        queryset=Retriever.objects.none(),
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="Disagreement: the built-in retrievers to compare with.",
    )
    active = forms.BooleanField(required=False, initial=True, label="Draw weekly")

    def __init__(self, *args, project, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["retrievers"].queryset = Retriever.objects.filter(
            project=project, kind__in=[RetrieverKind.BM25, RetrieverKind.EMBEDDING]
        )

    def clean_quotas(self) -> dict:
        quotas = {}
        for part in filter(None, (p.strip() for p in self.cleaned_data["quotas"].split(","))):
            stratum, equals, count = part.rpartition("=")
            if not equals or not stratum.strip() or not count.strip().isdigit():
                raise forms.ValidationError(f"Write each quota as stratum=count, not {part!r}.")
            quotas[stratum.strip()] = int(count)
        return quotas

    def clean(self):
        data = super().clean()
        if self.errors:
            return data
        filters = {
            "window_days": data["window_days"],
            "feedback": data["feedback"],
            "refused": {"yes": True, "no": False}.get(data["refused"]),
            "no_citation": data["no_citation"],
            "top_score_below": data["top_score_below"],
            "user_group": data["user_group"].strip(),
            "system_version": data["system_version"].strip(),
        }
        try:
            data["spec"] = check_rule(
                filters=filters,
                strategy=data["strategy"],
                stratify_by=data["stratify_by"],
                quotas=data["quotas"],
                size=data["size"],
                seed=data["seed"],
            )
        except ServiceError as exc:
            raise forms.ValidationError(str(exc)) from exc
        return data


class PromotionForm(forms.Form):
    target = forms.ModelChoiceField(
        queryset=QuestionSet.objects.none(),
        empty_label=None,
        label="Into the question set",
        help_text="Its next gold set version will hold them; versions already finalised stay "
        "as they are.",
    )
    only_misses = forms.TypedChoiceField(
        choices=[("1", "Only the misses"), ("0", "Every labelled question")],
        coerce=lambda value: value == "1",
        widget=forms.RadioSelect,
        initial="1",
        label="Which questions",
    )

    def __init__(self, *args, sample: Sample, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["target"].queryset = (
            QuestionSet.objects.content()
            .filter(project=sample.project, sample__isnull=True)
            .order_by("name")
        )
