from django.apps import AppConfig


class EvaluationConfig(AppConfig):
    name = "evaluation"

    def ready(self) -> None:
        # Every index build is evaluated on the newest gold set; the corpus builds indexes and
        # cannot import evaluation, so the listener is handed over here, explicitly.
        from corpus.services.retrieval import listen_for_index_builds
        from evaluation.services.index_evaluations import evaluate_after_build

        listen_for_index_builds(evaluate_after_build)
