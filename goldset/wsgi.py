import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "goldset.settings")
application = get_wsgi_application()

# After the app has loaded (settings, apps, middleware): import every view and freeze the
# worker's long-lived objects, so full garbage collections stop walking them in requests.
from goldset.worker_start import settle  # noqa: E402 - needs the app set up

settle()
