from __future__ import annotations

import copy
import json

from django import forms
from django.conf import settings
from django.template.defaultfilters import filesizeformat

from corpus.extraction import SUPPORTED_SUFFIXES
from corpus.httpendpoint import LIMITS, PRESETS, url_template_problems
from corpus.models import (
    AccessGroup,
    ChunkingScheme,
    ChunkingStrategy,
    ChunkUnit,
    EscalateOn,
    Project,
    RetrieverKind,
    Role,
)
from corpus.services.test_users import parse_headers, parse_user_value
from corpus.sources import MAX_DOC_ID_LENGTH, RECORD_SUFFIXES
from goldeval.formats.textfiles import text_problem
from goldeval.text.chunking import ChunkingError, ChunkSpec
from goldset.errors import ServiceError

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
            # A file's name becomes its doc id: refused here rather than cut or cleaned.
            name_problem = text_problem(upload.name, max_length=MAX_DOC_ID_LENGTH, identifier=True)
            if name_problem:
                shown = repr(upload.name[:60])
                problems.append(
                    forms.ValidationError(
                        f"The file name {shown} {name_problem}; rename the file.",
                        code="bad_name",
                    )
                )
            elif suffix not in ACCEPTED_SUFFIXES:
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


HTTP_FIELDS = (
    "preset",
    "url",
    "method",
    "headers",
    "body",
    "results_path",
    "doc_id_path",
    "score_path",
    "start_path",
    "end_path",
    "text_path",
    "timeout",
    "retries",
    "concurrency",
)


def validate_url_template(value: str) -> None:
    """A URL every reader reads one way (`corpus.httpurl`), or the field's error: a tab, an
    octal address or fullwidth digits are a message on the form, never a 500."""
    problems = url_template_problems(value) if value else []
    if problems:
        raise forms.ValidationError("; ".join(problems) + ".")


_PATH_HELP = "A dotted path in the answer, like hits.hits, _source.doc_id or items[0].id."


_FIELD_KINDS = {
    "scheme": (RetrieverKind.BM25, RetrieverKind.EMBEDDING, RetrieverKind.RUN, RetrieverKind.HTTP),
    **{n: (RetrieverKind.BM25,) for n in ("stem", "stopwords", "title", "k1", "b", "idf")},
    **{n: (RetrieverKind.EMBEDDING,) for n in ("vectors", "backend", "model_path")},
}


class RetrieverForm(forms.Form):
    name = forms.SlugField(max_length=60, help_text="Lower-case letters, digits, - and _.")
    kind = forms.ChoiceField(choices=RetrieverKind.choices)
    scheme = forms.ModelChoiceField(
        queryset=ChunkingScheme.objects.none(),
        required=False,
        label="Chunking scheme",
        help_text="The passages it searches; for an uploaded run or an HTTP API, what results "
        "without offsets or text map to in a pool.",
    )
    # On by default, as the page's typical settings say; unticking them is still honoured.
    stem = forms.BooleanField(required=False, initial=True, label="BM25: stem words (Snowball)")
    stopwords = forms.BooleanField(
        required=False, initial=True, label="BM25: drop English stopwords"
    )
    title = forms.BooleanField(
        required=False,
        label="BM25: index the document title with each passage",
        help_text="As BEIR and Pyserini index title + text.",
    )
    k1 = forms.FloatField(initial=0.9, min_value=0, required=False, label="BM25 k1")
    b = forms.FloatField(initial=0.4, min_value=0, max_value=1, required=False, label="BM25 b")
    idf = forms.ChoiceField(
        required=False,
        initial="lucene",
        label="BM25 IDF",
        choices=[
            ("lucene", "Lucene (Pyserini, BEIR, bm25s): ln(1 + (N - df + 0.5) / (df + 0.5))"),
            ("okapi", "Okapi (rank-bm25): ln((N - df + 0.5) / (df + 0.5)), floored"),
        ],
    )
    vectors = forms.ChoiceField(
        required=False,
        initial="float32",
        label="Embedding: store vectors as",
        choices=[
            ("float32", "float32"),
            ("float16", "float16: half the stored size, the same top 10 on Cranfield"),
        ],
    )
    backend = forms.ChoiceField(
        required=False,
        label="Embedding: encoder",
        choices=[
            ("", "the deployment's default"),
            ("torch", "torch (sentence-transformers, float32)"),
            (
                "onnx-int8",
                "ONNX build of the same model: OpenVINO bf16 where the CPU has it, else int8 "
                "(faster; a model version of its own)",
            ),
        ],
    )
    model_path = forms.CharField(
        required=False,
        max_length=500,
        label="Embedding model folder",
        help_text="A sentence-transformers folder on the server; blank for the packaged "
        "all-MiniLM-L6-v2.",
    )
    # The HTTP retriever (admins): blank fields keep the preset's.
    preset = forms.ChoiceField(
        required=False,
        label="HTTP: preset",
        choices=[("", "none: give every field")] + [(k, p.label) for k, p in PRESETS.items()],
    )
    url = forms.CharField(
        required=False,
        max_length=2000,
        label="HTTP: URL template",
        validators=[validate_url_template],
        widget=forms.TextInput(attrs={"class": "wide"}),
        help_text="Placeholders: {{question}} {{k}} {{user}} {{groups}} (percent-encoded here).",
    )
    method = forms.ChoiceField(
        required=False,
        label="HTTP: method",
        choices=[("", "the preset's"), ("GET", "GET"), ("POST", "POST")],
    )
    headers = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        label="HTTP: headers",
        help_text="One 'Name: value' per line. A secret as env:NAME, read from the worker's "
        "environment (e.g. Authorization: env:OUR_SEARCH_TOKEN); never the value itself.",
    )
    body = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 6}),
        label="HTTP: JSON body template",
        help_text='Placeholders inside strings: "size": "{{k}}" becomes a number.',
    )
    results_path = forms.CharField(required=False, label="HTTP: results path", help_text=_PATH_HELP)
    doc_id_path = forms.CharField(required=False, label="HTTP: doc id path (in a result)")
    score_path = forms.CharField(required=False, label="HTTP: score path")
    start_path = forms.CharField(required=False, label="HTTP: start offset path")
    end_path = forms.CharField(required=False, label="HTTP: end offset path")
    text_path = forms.CharField(
        required=False,
        label="HTTP: passage text path",
        help_text="Without offsets, the text is located in the document (exact, then fuzzy).",
    )
    timeout = forms.FloatField(
        required=False,
        min_value=LIMITS["timeout"][0],
        max_value=LIMITS["timeout"][1],
        label="HTTP: timeout (seconds per attempt)",
        initial=10.0,
    )
    retries = forms.IntegerField(
        required=False,
        min_value=0,
        max_value=LIMITS["retries"][1],
        initial=2,
        label="HTTP: retries",
    )
    concurrency = forms.IntegerField(
        required=False,
        min_value=1,
        max_value=LIMITS["concurrency"][1],
        initial=4,
        label="HTTP: requests at once",
    )

    question = forms.CharField(
        required=False,
        max_length=1000,
        label="HTTP: try a question",
        help_text="Try a question calls the endpoint once and shows the mapped results; "
        "nothing is saved.",
    )

    def __init__(self, *args, project: Project, may_choose_model: bool, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["scheme"].queryset = project.chunking_schemes.all()
        for name, field in self.fields.items():
            # The page shows only the chosen kind's fields (static/goldset/retriever_form.js).
            kinds = _FIELD_KINDS.get(name)
            if kinds is None and name in (*HTTP_FIELDS, "question"):
                kinds = (RetrieverKind.HTTP,)
            field.kinds = " ".join(kinds) if kinds else ""
        if not may_choose_model:
            # Loading model files from a server path is an admin's decision, and so are
            # outbound calls carrying the server's environment variables.
            del self.fields["model_path"]
            self.fields["kind"].choices = [
                c for c in RetrieverKind.choices if c[0] != RetrieverKind.HTTP
            ]
            for name in (*HTTP_FIELDS, "question"):
                del self.fields[name]

    def clean(self):
        data = super().clean()
        for name in ("k1", "b", "idf", "vectors"):
            if data.get(name) in (None, "") and name not in self.errors:
                data[name] = self.fields[name].initial
        if data.get("kind") == RetrieverKind.HTTP:
            try:
                data["headers"] = parse_headers(data.get("headers", ""))
            except ServiceError as error:
                self.add_error("headers", str(error))
        return data

    @property
    def presets(self) -> list[tuple[str, object]]:
        """The HTTP presets, shown with their method, URL, body and paths."""
        return list(PRESETS.items()) if "preset" in self.fields else []

    def service_arguments(self) -> dict:
        """The keyword arguments of `corpus.services.retrieval.add_retriever`."""
        data = dict(self.cleaned_data)
        data.pop("question", None)
        data["backend"] = data.get("backend") or None
        http = {name: data.pop(name, None) for name in HTTP_FIELDS}
        if data["kind"] != RetrieverKind.HTTP:
            return data
        data["endpoint"] = {
            "preset": http["preset"] or "",
            "url": http["url"],
            "method": http["method"] or (None if http["preset"] else "POST"),
            "headers": http["headers"],
            "body": http["body"],
            "mapping": {
                name: http[f"{name}_path"]
                for name in ("results", "doc_id", "score", "start", "end", "text")
            },
            **{n: http[n] for n in ("timeout", "retries", "concurrency") if http[n] is not None},
        }
        return data


class EndpointForm(forms.Form):
    """An HTTP retriever's endpoint, changed by an admin: every field given, no preset."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for name in HTTP_FIELDS[1:]:
            self.fields[name] = copy.deepcopy(RetrieverForm.base_fields[name])
        self.fields["method"].choices = [("GET", "GET"), ("POST", "POST")]

    def clean(self):
        data = super().clean()
        try:
            data["headers"] = parse_headers(data.get("headers") or "")
        except ServiceError as error:
            self.add_error("headers", str(error))
        return data

    @staticmethod
    def initial_of(endpoint: dict) -> dict:
        mapping = endpoint.get("mapping", {})
        return {
            "url": endpoint.get("url", ""),
            "method": endpoint.get("method", "POST"),
            "headers": "\n".join(f"{k}: {v}" for k, v in endpoint.get("headers", {}).items()),
            "body": endpoint.get("body", ""),
            **{f"{name}_path": mapping.get(name, "") for name in mapping},
            **{name: endpoint.get(name) for name in ("timeout", "retries", "concurrency")},
        }

    def endpoint(self) -> dict:
        """The fields of `corpus.services.http_retrieval.check_endpoint`."""
        data = self.cleaned_data
        return {
            "url": data["url"],
            "method": data["method"],
            "headers": data["headers"],
            "body": data["body"],
            "mapping": {
                name: data[f"{name}_path"]
                for name in ("results", "doc_id", "score", "start", "end", "text")
            },
            **{n: data[n] for n in ("timeout", "retries", "concurrency") if data[n] is not None},
        }


class TestUserForm(forms.Form):
    __test__ = False  # a form for test users, not a pytest class

    name = forms.SlugField(max_length=60, help_text="Lower-case letters, digits, - and _.")
    groups = forms.ModelMultipleChoiceField(
        queryset=AccessGroup.objects.none(),
        required=False,
        widget=forms.CheckboxSelectMultiple,
        label="Access groups",
        help_text="The Goldset access groups this user is meant to have.",
    )
    no_groups = forms.BooleanField(
        required=False, label="In no group: may see only unrestricted documents"
    )
    unrestricted = forms.BooleanField(
        required=False,
        label="Sees every document (an admin): the reference run for over-restriction",
    )
    headers = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="Sent when acting as this user, one 'Name: value' per line; secrets as "
        "env:NAME (e.g. Authorization: env:ALICE_TOKEN).",
    )
    user_value = forms.CharField(
        required=False,
        max_length=2000,
        label="Value of {{user}}",
        help_text="Text, JSON (a list or object), or env:NAME; blank for the name.",
    )
    description = forms.CharField(required=False, max_length=300)

    def __init__(self, *args, project: Project, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["groups"].queryset = project.access_groups.order_by("name")

    def clean(self):
        data = super().clean()
        try:
            data["headers"] = parse_headers(data.get("headers") or "")
        except ServiceError as error:
            self.add_error("headers", str(error))
        try:
            data["user_value"] = parse_user_value(data.get("user_value") or "")
        except ServiceError as error:
            self.add_error("user_value", str(error))
        return data

    def service_arguments(self) -> dict:
        """The keyword arguments of `corpus.services.test_users.save_test_user`."""
        data = dict(self.cleaned_data)
        data["groups"] = [group.name for group in data["groups"]]
        return data

    @staticmethod
    def initial_of(profile) -> dict:
        value = profile.user_value
        return {
            "name": profile.name,
            "groups": list(profile.access_groups.all()),
            "no_groups": not profile.unrestricted and not profile.access_groups.exists(),
            "unrestricted": profile.unrestricted,
            "headers": "\n".join(f"{k}: {v}" for k, v in (profile.headers or {}).items()),
            "user_value": ""
            if value is None
            else value
            if isinstance(value, str)
            else json.dumps(value),
            "description": profile.description,
        }


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


class EscalationForm(FirstProblemMixin, forms.Form):
    escalate_on = forms.ChoiceField(
        label="A third labeller grades a passage two labellers disagree on",
        choices=EscalateOn.choices,
    )


class AddMemberForm(FirstProblemMixin, forms.Form):
    username = forms.CharField(max_length=150, label="Username of an existing account")
    role = forms.ChoiceField(choices=ROLE_CHOICES, initial=Role.LABELLER)

    def __init__(self, *args, **kwargs):
        # Shown beside CreateAccountForm, whose fields have the same names: ids of its own, so
        # no label points at the other form's field (the posted names stay the same).
        kwargs.setdefault("auto_id", "id_add_%s")
        super().__init__(*args, **kwargs)


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
