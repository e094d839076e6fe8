#!/usr/bin/env python
import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "goldset.settings")
    from django.conf import settings
    from django.core.exceptions import ImproperlyConfigured
    from django.core.management import execute_from_command_line

    try:
        settings.INSTALLED_APPS  # noqa: B018 - loads the settings, which check the environment
    except ImproperlyConfigured as error:
        # A setting missing from the environment (SECRET_KEY, say) is the operator's to fix:
        # say which, as every command says what is wrong with its input, not with a traceback.
        print(f"manage.py: {error}", file=sys.stderr)
        sys.exit(2)  # nothing done, as the commands' own exit codes say
    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
