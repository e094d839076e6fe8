from django.apps import AppConfig


class LabellingConfig(AppConfig):
    name = "labelling"

    def ready(self) -> None:
        # Registers the pool job handler in the web process and in workers alike.
        from labelling.services import pools  # noqa: F401
