"""The manifest upload, a retriever's manifest source and the health thresholds."""

from __future__ import annotations

from django import forms

from corpus.models import Retriever
from corpus.services.test_users import parse_headers
from goldset.errors import ServiceError
from health.models import IndexHealthThresholds
from health.services.manifest_sources import TIMEOUT, source_problems


class ManifestUploadForm(forms.Form):
    retriever = forms.ModelChoiceField(queryset=Retriever.objects.none())
    file = forms.FileField(label="Manifest (CSV or JSONL)")

    def __init__(self, *args, project, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["retriever"].queryset = Retriever.objects.filter(project=project).order_by(
            "name"
        )


class ManifestSourceForm(forms.Form):
    """Where a retriever's manifest is fetched from (admins): its own URL and headers."""

    url = forms.CharField(
        label="Manifest URL",
        max_length=2000,
        help_text="Fetched with GET, no redirect followed; its host must be in "
        "GOLDSET_HTTP_ALLOWED_HOSTS.",
    )
    headers = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="This source's own headers, one 'Name: value' per line; a credential as "
        "env:NAME (read from the worker's environment), never the value. The search "
        "endpoint's headers are not sent.",
    )
    timeout = forms.FloatField(
        initial=30.0,
        min_value=TIMEOUT[0],
        max_value=TIMEOUT[1],
        label="Timeout (seconds)",
    )

    def __init__(self, *args, retriever, **kwargs):
        super().__init__(*args, **kwargs)
        self.retriever = retriever

    def clean_headers(self):
        try:
            return parse_headers(self.cleaned_data.get("headers") or "")
        except ServiceError as error:
            raise forms.ValidationError(str(error)) from None

    def clean(self):
        cleaned = super().clean()
        if {"url", "headers", "timeout"} <= cleaned.keys():
            problems = source_problems(retriever=self.retriever, **cleaned)
            for field, found in problems.items():
                self.add_error(field, "; ".join(found) + ".")
        return cleaned

    @staticmethod
    def initial_of(source) -> dict:
        if source is None:
            return {}
        headers = "\n".join(f"{k}: {v}" for k, v in source.headers.items())
        return {"url": source.url, "headers": headers, "timeout": source.timeout}


class HealthThresholdsForm(forms.ModelForm):
    class Meta:
        model = IndexHealthThresholds
        fields = ["max_stale", "max_lag_days", "fail_on_model_mix", "max_crowding"]
        labels = {
            "max_stale": "Most stale share (0–1)",
            "max_lag_days": "Longest lag (days)",
            "fail_on_model_mix": "Alert on any model mix",
            "max_crowding": "Most crowding (0–1)",
        }

    def clean(self):
        cleaned = super().clean()
        for name in ("max_stale", "max_crowding"):
            value = cleaned.get(name)
            if value is not None and not 0 <= value <= 1:
                self.add_error(name, "A share between 0 and 1.")
        lag = cleaned.get("max_lag_days")
        if lag is not None and lag < 0:
            self.add_error("max_lag_days", "Zero days or more.")
        return cleaned
