from django.apps import AppConfig


class EvaluationConfig(AppConfig):
    name = "evaluation"

    def ready(self) -> None:
        # Registers the "evaluation_run" job handler in the web process and in workers alike.
        from evaluation import services  # noqa: F401
