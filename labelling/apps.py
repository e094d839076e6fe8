from django.apps import AppConfig


class LabellingConfig(AppConfig):
    name = "labelling"

    def ready(self) -> None:
        # Whether an assignment is done depends on which passages its labeller may see, so the
        # corpus tells labelling when access changes. Handed over here, explicitly: the corpus
        # cannot import labelling.
        from corpus.services.projects import listen_for_access_changes
        from labelling.services.completion import refresh_completion

        listen_for_access_changes(refresh_completion)
        # The stored gold decisions (labelling.services.gold_state) also depend on who is a
        # member and whose account is active, which change outside labelling's services.
        from labelling.services import gold_state

        gold_state.connect_signals()
