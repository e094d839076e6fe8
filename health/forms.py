"""The manifest upload and the health thresholds."""

from __future__ import annotations

from django import forms

from corpus.models import Retriever, RetrieverKind
from health.models import IndexHealthThresholds


class ManifestUploadForm(forms.Form):
    retriever = forms.ModelChoiceField(queryset=Retriever.objects.none())
    file = forms.FileField(label="Manifest (CSV or JSONL)", required=False)
    url = forms.URLField(
        label="Or its URL",
        assume_scheme="https",
        required=False,
        max_length=2000,
        help_text="HTTP retrievers: fetched from their own host, with their headers.",
    )

    def clean(self):
        cleaned = super().clean()
        if bool(cleaned.get("file")) == bool(cleaned.get("url")):
            raise forms.ValidationError("Upload a file or give a URL (one of the two).")
        retriever = cleaned.get("retriever")
        if cleaned.get("url") and retriever is not None and retriever.kind != RetrieverKind.HTTP:
            self.add_error("url", f"{retriever.name} is not an HTTP retriever: upload the file.")
        return cleaned

    def __init__(self, *args, project, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["retriever"].queryset = Retriever.objects.filter(project=project).order_by(
            "name"
        )


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
