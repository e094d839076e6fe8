"""The evaluation pages' forms: finalising a gold set, uploading a run, running a retriever,
setting k sent to the model."""

from __future__ import annotations

from django import forms

from corpus.models import Retriever, RetrieverKind
from evaluation.services.evaluation_runs import MAX_K_SENT_TO_MODEL
from labelling.resolution import DEFAULT_MIN_SPAN_F1


class FinaliseForm(forms.Form):
    min_span_f1 = forms.FloatField(
        min_value=0.0,
        max_value=1.0,
        required=False,
        initial=DEFAULT_MIN_SPAN_F1,
        label="Minimum span F1 for two labellers to agree",
    )


class UploadRunForm(forms.Form):
    name = forms.CharField(
        max_length=100, required=False, help_text="Defaults to the file name without extension."
    )
    file = forms.FileField(label="Run file (JSONL or TREC)")


class RetrieverRunForm(forms.Form):
    retriever = forms.ModelChoiceField(queryset=Retriever.objects.none())

    def __init__(self, *args, project, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["retriever"].queryset = Retriever.objects.filter(
            project=project, active_index__isnull=False
        ).exclude(kind=RetrieverKind.RUN)


class KSentForm(forms.Form):
    k_sent_to_model = forms.IntegerField(
        min_value=1, max_value=MAX_K_SENT_TO_MODEL, label="k sent to the model"
    )
