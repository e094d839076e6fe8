from django.apps import AppConfig


class LabellingConfig(AppConfig):
    name = "labelling"
