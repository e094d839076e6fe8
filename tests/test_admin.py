"""The admin site covers every model, and its pages render for a superuser."""

from django.apps import apps
from django.contrib import admin
from django.test import Client
from django.urls import reverse

from tests.conftest import GOLDSET_APPS
from tests.factories import PASSWORD, UserFactory


def test_every_model_is_in_the_admin_and_its_list_renders(db):
    superuser = UserFactory(is_staff=True, is_superuser=True)
    client = Client()
    assert client.login(username=superuser.username, password=PASSWORD)
    for app in GOLDSET_APPS:
        for model in apps.get_app_config(app).get_models():
            if model._meta.label == "evaluation.GoldSetFile":
                continue  # shown inline on its gold set
            assert admin.site.is_registered(model), f"{model._meta.label} is not in the admin"
            url = reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")
            assert client.get(url).status_code == 200, url
