from django import forms

from corpus.models import AccessGroup
from judges.client import MAX_MODEL, TEMPERATURE
from judges.models import JudgeTemplate, JudgingPass
from judges.prompt import DEFAULT_PROMPT, MAX_PROMPT
from judges.services.judging import MAX_SAMPLE
from labelling.models import QuestionSet


class JudgeForm(forms.Form):
    """A judge's configuration, set by an admin. The access groups offered are the admin's
    own: a judge is never given documents its configurer may not see."""

    name = forms.SlugField(max_length=100, help_text="Lower-case letters, digits, - and _.")
    template = forms.ChoiceField(choices=JudgeTemplate.choices)
    url = forms.CharField(
        max_length=2000,
        label="URL",
        help_text="e.g. http://llm.internal:8000/v1/chat/completions; the host must be in "
        "GOLDSET_HTTP_ALLOWED_HOSTS.",
    )
    model = forms.CharField(max_length=MAX_MODEL, required=False)
    api_key = forms.CharField(
        max_length=200,
        required=False,
        label="API key",
        help_text="env:NAME, the environment variable holding the key where judging runs; "
        "never the key itself.",
    )
    prompt = forms.CharField(
        max_length=MAX_PROMPT,
        widget=forms.Textarea(attrs={"rows": 16}),
        initial=DEFAULT_PROMPT,
        help_text="Placeholders {{question}}, {{passage}}, {{scale}}. A changed prompt is a "
        "new version; calibration is per version.",
    )
    temperature = forms.FloatField(min_value=TEMPERATURE[0], max_value=TEMPERATURE[1], initial=0)
    seed = forms.IntegerField(required=False, initial=0, min_value=-(2**31), max_value=2**31 - 1)
    timeout = forms.FloatField(min_value=0.1, max_value=120, initial=30, help_text="seconds")
    retries = forms.IntegerField(min_value=0, max_value=10, initial=2)
    concurrency = forms.IntegerField(min_value=1, max_value=32, initial=4)
    groups = forms.ModelMultipleChoiceField(
        queryset=AccessGroup.objects.none(),
        required=False,
        widget=forms.CheckboxSelectMultiple,
        label="Access groups",
        help_text="Passages of documents restricted to other groups are never sent to it.",
    )

    def __init__(self, *args, project, user, editing=False, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["groups"].queryset = AccessGroup.objects.filter(project=project, members=user)
        if editing:
            del self.fields["name"]


class StartJudgingForm(forms.Form):
    question_set = forms.ModelChoiceField(queryset=QuestionSet.objects.none())
    sample = forms.IntegerField(
        required=False,
        min_value=1,
        max_value=MAX_SAMPLE,
        help_text="Judge this many candidates only (the same ones each time); empty: all.",
    )
    judging_pass = forms.ChoiceField(choices=JudgingPass.choices, label="Pass")

    def __init__(self, *args, project, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["question_set"].queryset = QuestionSet.objects.filter(project=project).content()


class GoldVoteForm(forms.Form):
    """A lead's switch: count this judge's vote in a question set's gold rule, or not."""

    question_set = forms.ModelChoiceField(queryset=QuestionSet.objects.none())
    on = forms.BooleanField(required=False, label="Count the AI judge's vote in the gold rule")

    def __init__(self, *args, project, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["question_set"].queryset = QuestionSet.objects.filter(project=project).content()
