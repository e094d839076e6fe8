"""The evaluation pages' forms: finalising a gold set, uploading a run, running a retriever,
setting k sent to the model."""

from __future__ import annotations

from django import forms
from django.db.models import Q

from corpus.models import PermissionProfile, Retriever, RetrieverKind
from evaluation.models import GoldSet
from evaluation.services.evaluation_runs import MAX_K_SENT_TO_MODEL
from evaluation.services.permission_replays import MAX_K, Upload
from labelling.resolution import DEFAULT_MIN_SPAN_F1


class FinaliseForm(forms.Form):
    min_span_f1 = forms.FloatField(
        min_value=0.0,
        max_value=1.0,
        required=False,
        initial=DEFAULT_MIN_SPAN_F1,
        label="Minimum span F1 for two labellers to agree",
    )


CHANGES = [
    ("", "—"),
    ("chunking", "chunking"),
    ("embeddings", "embeddings"),
    ("filters", "filters"),
    ("index settings", "index settings"),
    ("corpus", "corpus (re-indexed)"),
]


class UploadRunForm(forms.Form):
    name = forms.CharField(
        max_length=100, required=False, help_text="Defaults to the file name without extension."
    )
    file = forms.FileField(label="Run file (JSONL or TREC)")
    # Optional: the team's system it came from and what changed in it, for that retriever
    # page's plot of figures over changes (issue 17).
    retriever = forms.ModelChoiceField(
        queryset=Retriever.objects.none(), required=False, label="The team's system"
    )
    change = forms.ChoiceField(choices=CHANGES, required=False, label="What changed")

    def __init__(self, *args, project=None, **kwargs):
        super().__init__(*args, **kwargs)
        if project is not None:
            self.fields["retriever"].queryset = Retriever.objects.filter(
                project=project, kind=RetrieverKind.RUN
            ).order_by("name")

    def clean(self):
        cleaned = super().clean()
        if cleaned.get("change") and not cleaned.get("retriever"):
            self.add_error("retriever", "Choose the system whose change this run shows.")
        return cleaned


class RetrieverRunForm(forms.Form):
    retriever = forms.ModelChoiceField(queryset=Retriever.objects.none())

    def __init__(self, *args, project, **kwargs):
        # Shown beside UploadRunForm, which has a "retriever" too: ids of its own, so neither
        # label points at the other form's field (the posted name stays the same).
        kwargs.setdefault("auto_id", "id_builtin_%s")
        super().__init__(*args, **kwargs)
        self.fields["retriever"].queryset = searching_retrievers(project)


class KSentForm(forms.Form):
    k_sent_to_model = forms.IntegerField(
        min_value=1, max_value=MAX_K_SENT_TO_MODEL, label="k sent to the model"
    )


def searching_retrievers(project):
    """Retrievers that can search now: built-in ones with an index, and HTTP ones."""
    return Retriever.objects.filter(project=project).filter(
        Q(active_index__isnull=False, kind__in=[RetrieverKind.BM25, RetrieverKind.EMBEDDING])
        | Q(kind=RetrieverKind.HTTP)
    )


class PermissionReplayForm(forms.Form):
    """A replay: through a retriever, or from one uploaded run per chosen test user."""

    gold_set = forms.ModelChoiceField(queryset=GoldSet.objects.none(), empty_label=None)
    test_users = forms.ModelMultipleChoiceField(
        queryset=PermissionProfile.objects.none(), widget=forms.CheckboxSelectMultiple
    )
    retriever = forms.ModelChoiceField(
        queryset=Retriever.objects.none(),
        required=False,
        empty_label="none: I upload one run per test user",
        help_text="Run as each test user: a built-in retriever leaves out what their groups "
        "hide before the top k; an HTTP one sends their headers and {{user}}.",
    )
    k = forms.IntegerField(min_value=1, max_value=MAX_K, initial=10, label="Results per question")
    with_canaries = forms.BooleanField(
        required=False, initial=True, label="Also ask the project's canary questions"
    )

    def __init__(self, *args, project, **kwargs):
        super().__init__(*args, **kwargs)
        self.project = project
        self.fields["gold_set"].queryset = GoldSet.objects.in_project(project).newest_first()
        profiles = PermissionProfile.objects.filter(project=project).order_by("name")
        self.fields["test_users"].queryset = profiles
        self.fields["test_users"].initial = list(profiles)
        self.fields["retriever"].queryset = searching_retrievers(project)
        self.fields["k"].initial = max(10, project.k_sent_to_model)
        for profile in profiles:
            self.fields[f"run_{profile.pk}"] = forms.FileField(
                required=False, label=f"Run as {profile.name} (JSONL or TREC)"
            )

    def run_fields(self):
        return [self[name] for name in self.fields if name.startswith("run_")]

    def clean(self):
        data = super().clean()
        uploads = {
            int(name.removeprefix("run_")): Upload(upload.name, upload.read())
            for name, upload in data.items()
            if name.startswith("run_") and upload
        }
        chosen = data.get("test_users") or []
        if data.get("retriever") is None:
            missing = [p.name for p in chosen if p.pk not in uploads]
            if missing:
                raise forms.ValidationError(
                    "Choose a retriever, or upload a run for each chosen test user (missing: "
                    + ", ".join(missing)
                    + ")."
                )
            data["uploads"] = {p.pk: uploads[p.pk] for p in chosen}
        elif uploads:
            raise forms.ValidationError("Choose a retriever or upload runs, not both.")
        return data

    def service_arguments(self) -> dict:
        data = self.cleaned_data
        return {
            "gold_set": data["gold_set"],
            "test_users": list(data["test_users"]),
            "k": data["k"],
            "retriever": data.get("retriever"),
            "uploads": data.get("uploads"),
            "with_canaries": data["with_canaries"],
        }


class PowerForm(forms.Form):
    """The power calculator: a difference to size, on one of the compared figures, with the
    figures' σ_d or one the lead gives. Bounded so the answer stays a count a page can show."""

    measure = forms.ChoiceField(choices=(), label="Figure")
    delta = forms.FloatField(
        min_value=0.001,
        max_value=1.0,
        label="Difference to detect",
        help_text="e.g. 0.03 for three points of nDCG",
    )
    sigma = forms.FloatField(
        min_value=0.001,
        max_value=1.0,
        required=False,
        label="σ_d (optional)",
        help_text="the standard deviation of per-question differences; default: these runs'",
    )

    def __init__(self, *args, figures: dict | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.figures = figures or {}
        self.fields["measure"].choices = [(metric, metric) for metric in self.figures]

    def clean(self):
        cleaned = super().clean()
        figure = self.figures.get(cleaned.get("measure"), {})
        if "sigma" in cleaned and cleaned.get("sigma") is None and not figure.get("sigma_d"):
            self.add_error(
                "sigma",
                "These figures have no σ_d to start from (it needs two runs or more that "
                "disagree somewhere): give one.",
            )
        return cleaned
