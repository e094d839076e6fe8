from django.apps import AppConfig


class LabellingConfig(AppConfig):
    name = "labelling"

    def ready(self) -> None:
        # Registers the pool job handler and the access listener in every process.
        from labelling.services import judgements, pools  # noqa: F401
