from __future__ import annotations

from django import forms
from django.conf import settings
from django.template.defaultfilters import filesizeformat

from corpus.chunking import ChunkingError, ChunkSpec
from corpus.extraction import SUPPORTED_SUFFIXES
from corpus.models import (
    AccessGroup,
    ChunkingScheme,
    ChunkingStrategy,
    ChunkUnit,
    Project,
    RetrieverKind,
    Role,
)
from corpus.sources import RECORD_SUFFIXES

ACCEPTED_SUFFIXES = SUPPORTED_SUFFIXES + RECORD_SUFFIXES


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    widget = MultipleFileInput

    def __init__(self, **kwargs):
        # An empty file is reported by the import job with the other per-file problems.
        super().__init__(allow_empty_file=True, **kwargs)

    def clean(self, data, initial=None):
        files = data if isinstance(data, list | tuple) else [data]
        return [super(MultipleFileField, self).clean(f, initial) for f in files if f] or (
            super().clean(None, initial)
        )


class UploadForm(forms.Form):
    files = MultipleFileField(
        help_text=f"{', '.join(ACCEPTED_SUFFIXES)}; up to "
        f"{filesizeformat(settings.GOLDSET_MAX_UPLOAD_BYTES)} each."
    )
    access_groups = forms.ModelMultipleChoiceField(
        queryset=AccessGroup.objects.none(),
        required=False,
        widget=forms.CheckboxSelectMultiple,
        label="Restrict to access groups",
        help_text="Only members of a ticked group will see these documents. Leave all "
        "unticked for documents everyone in the project may see (a JSONL or CSV line may "
        "name its own groups).",
    )

    def __init__(self, *args, groups=None, **kwargs):
        """``groups``: the access groups the uploader may restrict documents to (none: no
        such field)."""
        super().__init__(*args, **kwargs)
        if groups is None or not groups.exists():
            del self.fields["access_groups"]
        else:
            self.fields["access_groups"].queryset = groups

    def clean_files(self):
        files = self.cleaned_data["files"]
        if len(files) > settings.GOLDSET_MAX_UPLOAD_FILES:
            raise forms.ValidationError(
                f"At most {settings.GOLDSET_MAX_UPLOAD_FILES} files at once; "
                f"you sent {len(files)}.",
                code="too_large",
            )
        problems = []
        for upload in files:
            suffix = "." + upload.name.rsplit(".", 1)[-1].lower() if "." in upload.name else ""
            if suffix not in ACCEPTED_SUFFIXES:
                problems.append(
                    forms.ValidationError(
                        f"{upload.name}: {suffix or 'no extension'} is not supported "
                        f"(use {', '.join(ACCEPTED_SUFFIXES)}).",
                        code="unsupported",
                    )
                )
            elif upload.size > settings.GOLDSET_MAX_UPLOAD_BYTES:
                problems.append(
                    forms.ValidationError(
                        f"{upload.name} is {filesizeformat(upload.size)}, over the "
                        f"{filesizeformat(settings.GOLDSET_MAX_UPLOAD_BYTES)} limit.",
                        code="too_large",
                    )
                )
        if problems:
            raise forms.ValidationError(problems)
        return files


class ChunkingSchemeForm(forms.ModelForm):
    class Meta:
        model = ChunkingScheme
        fields = ["name", "strategy", "unit", "size", "overlap"]

    def __init__(self, *args, project, **kwargs):
        super().__init__(*args, **kwargs)
        self.project = project
        self.fields["strategy"].choices = ChunkingStrategy.choices
        self.fields["unit"].choices = ChunkUnit.choices
        if self.instance.pk:
            self.fields["name"].disabled = True

    def clean_name(self):
        name = self.cleaned_data["name"]
        taken = ChunkingScheme.objects.filter(project=self.project, name=name).exclude(
            pk=self.instance.pk
        )
        if taken.exists():
            raise forms.ValidationError("A chunking scheme with this name already exists.")
        return name

    def clean(self):
        data = super().clean()
        if {"strategy", "unit", "size", "overlap"} <= data.keys():
            try:
                ChunkSpec(
                    strategy=data["strategy"],
                    unit=data["unit"],
                    size=data["size"],
                    overlap=data["overlap"],
                ).validate()
            except ChunkingError as exc:
                raise forms.ValidationError(str(exc))
        return data


class RetrieverForm(forms.Form):
    name = forms.SlugField(max_length=60, help_text="Lower-case letters, digits, - and _.")
    kind = forms.ChoiceField(choices=RetrieverKind.choices)
    scheme = forms.ModelChoiceField(
        queryset=ChunkingScheme.objects.none(),
        required=False,
        label="Chunking scheme",
        help_text="The passages it searches; for an uploaded run, what results without offsets "
        "map to.",
    )
    stem = forms.BooleanField(required=False, label="BM25: stem words (Snowball)")
    stopwords = forms.BooleanField(required=False, label="BM25: drop English stopwords")
    k1 = forms.FloatField(initial=0.9, min_value=0, required=False, label="BM25 k1")
    b = forms.FloatField(initial=0.4, min_value=0, max_value=1, required=False, label="BM25 b")
    model_path = forms.CharField(
        required=False,
        max_length=500,
        label="Embedding model folder",
        help_text="A sentence-transformers folder on the server; blank for the packaged "
        "all-MiniLM-L6-v2.",
    )

    def __init__(self, *args, project: Project, may_choose_model: bool, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["scheme"].queryset = project.chunking_schemes.all()
        if not may_choose_model:
            # Loading model files from a server path is an admin's decision.
            del self.fields["model_path"]

    def clean(self):
        data = super().clean()
        for name in ("k1", "b"):
            if data.get(name) is None and name not in self.errors:
                data[name] = self.fields[name].initial
        return data


# Team pages: projects, members, access groups ------------------------------------------------

ROLE_CHOICES = [(role.value, role.label) for role in Role]


class FirstProblemMixin:
    def first_problem(self) -> str:
        return next(iter(self.errors.values()))[0]


class ProjectForm(FirstProblemMixin, forms.Form):
    slug = forms.SlugField(
        max_length=60, help_text="Used in addresses: letters, digits, hyphens and underscores."
    )
    name = forms.CharField(max_length=200, required=False)


class AddMemberForm(FirstProblemMixin, forms.Form):
    username = forms.CharField(max_length=150, label="Username of an existing account")
    role = forms.ChoiceField(choices=ROLE_CHOICES, initial=Role.LABELLER)


class CreateAccountForm(FirstProblemMixin, forms.Form):
    username = forms.CharField(max_length=150)
    email = forms.EmailField(required=False, help_text="Optional; never used to send anything.")
    role = forms.ChoiceField(choices=ROLE_CHOICES, initial=Role.LABELLER)
    access = forms.ChoiceField(
        label="How they sign in",
        choices=[
            ("invite", "An invitation link: they choose their own password"),
            ("password", "A one-time password shown to you once"),
        ],
        initial="invite",
        widget=forms.RadioSelect,
    )


class RoleForm(FirstProblemMixin, forms.Form):
    role = forms.ChoiceField(choices=ROLE_CHOICES)


class RenewAccessForm(FirstProblemMixin, forms.Form):
    access = forms.ChoiceField(choices=[("invite", "invite"), ("password", "password")])


class AccessGroupForm(FirstProblemMixin, forms.Form):
    name = forms.CharField(max_length=100, help_text="e.g. hr-confidential")


class AccessGroupMembersForm(FirstProblemMixin, forms.Form):
    members = forms.ModelMultipleChoiceField(
        queryset=None, required=False, widget=forms.CheckboxSelectMultiple
    )

    def __init__(self, *args, project, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["members"].queryset = project.members()
        self.fields["members"].label_from_instance = lambda u: u.get_username()
