"""The one error every app's services raise for a request that cannot be carried out.

Django-free on purpose: services, commands, tasks and cores of any app import it without pulling
in another app's services.
"""


class ServiceError(Exception):
    """A request that cannot be carried out; the message is shown to the user as is."""
