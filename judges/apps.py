from django.apps import AppConfig


class JudgesConfig(AppConfig):
    name = "judges"

    def ready(self) -> None:
        # The AI judge is one more voter on the adjudication page and, where a lead turned
        # that on, in the gold rule. Handed over here, explicitly: labelling cannot import
        # judges.
        from judges.services.gold_vote import JudgeVoter
        from labelling.services.machine_votes import provide_machine_votes

        provide_machine_votes(JudgeVoter())
