"""Forms of the production loop's pages: API tokens and sampling rules."""

from __future__ import annotations

from django import forms


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
