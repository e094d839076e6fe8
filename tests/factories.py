import factory
from django.contrib.auth import get_user_model

from corpus.models import Membership, Project

PASSWORD = "correct-horse-battery"

# A realistic policy paragraph: long enough for near-duplicate detection to be meaningful.
POLICY_TEXT = (
    "Employees may carry over at most five days of unused annual leave into the next calendar "
    "year. Requests go through form HR-F-112 and must reach the HR service desk by 31 January. "
    "Leave that is not carried over lapses without payment unless a manager approved an exception "
    "in writing because of an operational need such as a peak season or a system migration. "
    "Part-time staff receive leave in proportion to their contracted hours, rounded up to the "
    "nearest half day, and staff who join during the year receive a pro-rated allowance that HR "
    "calculates from the first working day shown on the signed employment contract."
)


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"user{n}")
    password = factory.PostGenerationMethodCall("set_password", PASSWORD)

    @factory.post_generation
    def _save(obj, create, extracted, **kwargs):
        if create:
            obj.save()


class ProjectFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Project

    slug = factory.Sequence(lambda n: f"project-{n}")
    name = factory.Sequence(lambda n: f"Project {n}")


class MembershipFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Membership

    project = factory.SubFactory(ProjectFactory)
    user = factory.SubFactory(UserFactory)
    role = "labeller"
