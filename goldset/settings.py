"""One settings module, driven by the environment (DESIGN.md §4).

Quickstart default: DEBUG on, a SQLite file, tasks run in-process. Production: set SECRET_KEY,
ALLOWED_HOSTS, DATABASE_URL and REDIS_URL; DEBUG defaults to off.
"""

import json
import os
from datetime import timedelta
from pathlib import Path

import dj_database_url
from celery.schedules import crontab
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent


def _env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def _env_int(name: str, default: int) -> int:
    """An integer setting; one that is not a number stops the start with its name (Python's
    own error would say only "invalid literal for int()")."""
    value = os.environ.get(name, "").strip()
    if not value:
        return default
    try:
        return int(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name} is {value!r}: set it to a whole number.") from None


DEBUG = _env_bool("DEBUG", False)

SECRET_KEY = os.environ.get("SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured(
            "SECRET_KEY is not set. Set it in the environment (or DEBUG=1 for local development)."
        )
    SECRET_KEY = "django-insecure-local-development-only"  # noqa: S105 - DEBUG only

ALLOWED_HOSTS = [h.strip() for h in os.environ.get("ALLOWED_HOSTS", "").split(",") if h.strip()]
if DEBUG and not ALLOWED_HOSTS:
    ALLOWED_HOSTS = ["127.0.0.1", "localhost", "[::1]", "testserver"]
CSRF_TRUSTED_ORIGINS = [
    o.strip() for o in os.environ.get("CSRF_TRUSTED_ORIGINS", "").split(",") if o.strip()
]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "django_htmx",
    "template_partials",
    "csp",
    "axes",
    "corpus",
    "labelling",
    "answers",
    "evaluation",
    "health",
    "production",
    "judges",
    "demo",
]

MIDDLEWARE = [
    "goldset.middleware.ServerTimingMiddleware",  # first, to count all the others
    "django.middleware.security.SecurityMiddleware",
    "goldset.middleware.RequestSizeLimitMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "goldset.middleware.PrivatePagesMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    # A one-time password is changed before any other page (after auth and messages).
    "corpus.one_time_passwords.ChangeFirstMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "csp.middleware.CSPMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "goldset.middleware.RejectLookupParametersMiddleware",
    "goldset.middleware.DatabaseUnavailableMiddleware",
    "axes.middleware.AxesMiddleware",  # last, as axes asks: turns a lockout into its page
]

ROOT_URLCONF = "goldset.urls"
WSGI_APPLICATION = "goldset.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            # `partialdef` everywhere without a load tag, as Django 6 has it built in.
            "builtins": ["template_partials.templatetags.partials"],
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "csp.context_processors.nonce",
            ],
        },
    },
]

try:
    DATABASES = {
        "default": dj_database_url.config(
            default=f"sqlite:///{BASE_DIR / 'goldset.sqlite3'}",
            conn_max_age=_env_int("DB_CONN_MAX_AGE", 60),
            conn_health_checks=True,
        )
    }
except ValueError as error:  # dj_database_url's ParseError and UnknownSchemeError
    raise ImproperlyConfigured(
        f"DATABASE_URL is not a database address ({error}); for example "
        "postgres://user@127.0.0.1:5432/goldset"
    ) from None
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Web requests and the quickstart's worker share the file: wait for locks instead of
    # failing; WAL lets the job page read while the worker writes; IMMEDIATE takes the write
    # lock when a transaction starts, so two writers queue instead of one failing halfway.
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 20,
        "init_command": "PRAGMA journal_mode=WAL;",
        "transaction_mode": "IMMEDIATE",
    }
    DATABASES["default"]["CONN_MAX_AGE"] = 0
elif os.environ.get("DB_PREPARED_STATEMENTS", "1") != "0":
    # PostgreSQL: parameters bound by the server, and a statement a connection runs a fifth
    # time prepared, so the server no longer parses and plans a grading write's statements on
    # every keystroke.
    # Django leaves both off for connection poolers in transaction mode: behind one that does
    # not keep prepared statements (PgBouncer before 1.21), set DB_PREPARED_STATEMENTS=0.
    DATABASES["default"]["OPTIONS"] = {"server_side_binding": True, "prepare_threshold": 5}
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql" and (
    os.environ.get("DB_JIT", "0") != "1"
):
    # PostgreSQL's JIT compiles a query it prices high, which takes longer than the query: a
    # lead page's read over a whole set (60,000 stored rows) cost seconds of compiling once the
    # tables were analyzed (benchmarks/lead_pages.py --analyze). A web app's queries gain
    # nothing from it, so sessions start with it off (libpq's documented `options`). A pooler
    # that refuses startup options: set DB_JIT=1 and turn it off on the role instead.
    DATABASES["default"].setdefault("OPTIONS", {})["options"] = "-c jit=off"

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

# Log-in throttling (django-axes, see goldset/login_throttle.py): failures are counted per
# username and per client address; past the limit, log-ins (the admin's too) are refused with one
# message, account or not, until the cool-off ends or an admin runs `manage.py axes_reset_username`.
AUTHENTICATION_BACKENDS = [
    "goldset.login_throttle.LoginThrottleBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = _env_int("GOLDSET_LOGIN_FAILURE_LIMIT", 10)
AXES_COOLOFF_TIME = timedelta(minutes=_env_int("GOLDSET_LOGIN_COOLOFF_MINUTES", 15))
AXES_LOCKOUT_PARAMETERS = ["username", "ip_address"]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_CALLABLE = "goldset.login_throttle.lockout_response"
AXES_CLIENT_IP_CALLABLE = "goldset.login_throttle.client_address"
AXES_VERBOSE = False
# Reverse proxies in front of the app whose X-Forwarded-For is trusted (0: none).
GOLDSET_TRUSTED_PROXIES = _env_int("GOLDSET_TRUSTED_PROXIES", 0)

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "corpus:list-projects"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = BASE_DIR / "staticfiles"
WHITENOISE_USE_FINDERS = DEBUG
WHITENOISE_AUTOREFRESH = DEBUG

# Each response's web CPU in a Server-Timing header (goldset.middleware.ServerTimingMiddleware),
# for measuring a deployment; off unless asked for.
GOLDSET_SERVER_TIMING = _env_bool("GOLDSET_SERVER_TIMING", False)

# Uploads: the whole request body is capped before Django reads it (a clean 413-style message
# comes from the upload view's own check of each file, see corpus.forms).
GOLDSET_MAX_UPLOAD_BYTES = _env_int("GOLDSET_MAX_UPLOAD_BYTES", 25 * 2**20)
GOLDSET_MAX_UPLOAD_FILES = _env_int("GOLDSET_MAX_UPLOAD_FILES", 50)
GOLDSET_MAX_REQUEST_BYTES = _env_int("GOLDSET_MAX_REQUEST_BYTES", 200 * 2**20)
DATA_UPLOAD_MAX_MEMORY_SIZE = 2 * 2**20
FILE_UPLOAD_MAX_MEMORY_SIZE = 2 * 2**20
# Django refuses a request with more files than this before any view runs, with a bare 400;
# well above the form's limit, so a few files too many get the upload form's own message.
DATA_UPLOAD_MAX_NUMBER_FILES = max(1000, 10 * GOLDSET_MAX_UPLOAD_FILES)

GOLDSET_EMBEDDING_MODEL = os.environ.get("GOLDSET_EMBEDDING_MODEL", "")
# New embedding retrievers encode with the int8 ONNX build of the model ("onnx-int8",
# corpus/onnx_encoder.py, built on first use into the cache folder; faster than torch at the same
# Cranfield nDCG@10, docs/benchmarks.md) or the torch model itself ("torch").
GOLDSET_EMBEDDING_BACKEND = os.environ.get("GOLDSET_EMBEDDING_BACKEND", "onnx-int8")
# Encoder threads per process (0: one per core). Index-build workers run best at a lower CPU
# priority instead: GOLDSET_WORKER_PRIORITY=low (goldset.cpu_priority;
# docs/operations/scale-out.md), which a plain `nice` cannot give across containers or sessions.
GOLDSET_ENCODER_THREADS = _env_int("GOLDSET_ENCODER_THREADS", 0)
GOLDSET_WORKER_PRIORITY = (os.environ.get("GOLDSET_WORKER_PRIORITY") or "normal").strip().lower()
if GOLDSET_WORKER_PRIORITY not in {"normal", "low"}:
    raise ImproperlyConfigured(
        f"GOLDSET_WORKER_PRIORITY is {GOLDSET_WORKER_PRIORITY!r}: set it to normal or low."
    )
GOLDSET_MODEL_CACHE_DIR = Path(os.environ.get("GOLDSET_MODEL_CACHE_DIR", BASE_DIR / ".model-cache"))

# Index artifacts (corpus.services.artifacts): a folder by default; any Django storage backend
# with GOLDSET_ARTIFACT_STORAGE (e.g. storages.backends.s3.S3Storage from django-storages) and
# its options as JSON in GOLDSET_ARTIFACT_STORAGE_OPTIONS. Every web and worker process of one
# deployment must see the same storage: workers write indexes, web processes read them.
GOLDSET_ARTIFACT_DIR = Path(os.environ.get("GOLDSET_ARTIFACT_DIR", BASE_DIR / "artifacts"))
_ARTIFACT_BACKEND = os.environ.get(
    "GOLDSET_ARTIFACT_STORAGE", "django.core.files.storage.FileSystemStorage"
)
try:
    _ARTIFACT_OPTIONS = json.loads(os.environ.get("GOLDSET_ARTIFACT_STORAGE_OPTIONS") or "{}")
except json.JSONDecodeError as error:
    raise ImproperlyConfigured(
        f"GOLDSET_ARTIFACT_STORAGE_OPTIONS is not JSON ({error}): give the backend's options "
        'as an object, e.g. {"bucket_name": "goldset-artifacts"}'
    ) from None
if not isinstance(_ARTIFACT_OPTIONS, dict):
    raise ImproperlyConfigured(
        "GOLDSET_ARTIFACT_STORAGE_OPTIONS must be a JSON object of the backend's options"
    )
if _ARTIFACT_BACKEND == "django.core.files.storage.FileSystemStorage":
    _ARTIFACT_OPTIONS.setdefault("location", str(GOLDSET_ARTIFACT_DIR))
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    "artifacts": {"BACKEND": _ARTIFACT_BACKEND, "OPTIONS": _ARTIFACT_OPTIONS},
}

# The HTTP retriever calls only these hosts (comma-separated: names, *.domain, addresses or
# networks, each with an optional :port). Loopback, link-local and private addresses are called
# only when the address or its network is listed; nothing is allowed by default.
GOLDSET_HTTP_ALLOWED_HOSTS = [
    h.strip() for h in os.environ.get("GOLDSET_HTTP_ALLOWED_HOSTS", "").split(",") if h.strip()
]

# Tasks: with REDIS_URL a real broker and worker; without it, tasks run in-process (quickstart).
# Tasks: with REDIS_URL a real broker and worker. With GOLDSET_LOCAL_WORKER=1 (what `make run`
# sets) kombu's file-system transport in LOCAL_BROKER_DIR carries them to the worker `make run`
# starts beside the development server: no extra service. With neither, tasks run in-process.
REDIS_URL = os.environ.get("REDIS_URL", "")
LOCAL_WORKER = _env_bool("GOLDSET_LOCAL_WORKER", False) and not REDIS_URL
LOCAL_BROKER_DIR = Path(os.environ.get("GOLDSET_LOCAL_BROKER_DIR", BASE_DIR / ".goldset-broker"))
if REDIS_URL:
    CELERY_BROKER_URL = REDIS_URL
elif LOCAL_WORKER:
    # A host in the URL, or kombu warns "No hostname was supplied" on every connection.
    CELERY_BROKER_URL = "filesystem://localhost//"
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(LOCAL_BROKER_DIR / "messages"),
        "data_folder_out": str(LOCAL_BROKER_DIR / "messages"),
        "control_folder": str(LOCAL_BROKER_DIR / "control"),
    }
    for _folder in ("messages", "control"):
        (LOCAL_BROKER_DIR / _folder).mkdir(parents=True, exist_ok=True)
else:
    CELERY_BROKER_URL = "memory://localhost//"
CELERY_RESULT_BACKEND = None
# Queues per job kind: with GOLDSET_BUILD_QUEUE set (docker-compose: "builds"), index builds go
# to that queue, served by workers of their own (started with `-Q builds`, at a lower CPU
# priority), so a long MiniLM build never delays pooling, imports or evaluation runs on the
# default queue. Unset: one queue for every job.
GOLDSET_BUILD_QUEUE = os.environ.get("GOLDSET_BUILD_QUEUE", "")
if GOLDSET_BUILD_QUEUE:
    CELERY_TASK_ROUTES = {"corpus.tasks.build_index": {"queue": GOLDSET_BUILD_QUEUE}}
CELERY_TASK_ALWAYS_EAGER = not (REDIS_URL or LOCAL_WORKER)
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_IGNORE_RESULT = True
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
if REDIS_URL:
    CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 3600}
# The weekly sample (production.tasks.draw_weekly_samples): Monday 06:00 UTC by default
# (crontab day of week: 0 = Sunday). Emails link to GOLDSET_SITE_URL.
GOLDSET_SAMPLE_WEEKDAY = os.environ.get("GOLDSET_SAMPLE_WEEKDAY", "1")
GOLDSET_SAMPLE_HOUR = os.environ.get("GOLDSET_SAMPLE_HOUR", "6")


def _weekly_sample_schedule() -> crontab:
    try:
        return crontab(minute="0", hour=GOLDSET_SAMPLE_HOUR, day_of_week=GOLDSET_SAMPLE_WEEKDAY)
    except ValueError as error:  # celery's message names the value, not the variable
        raise ImproperlyConfigured(
            f"GOLDSET_SAMPLE_WEEKDAY {GOLDSET_SAMPLE_WEEKDAY!r} or GOLDSET_SAMPLE_HOUR "
            f"{GOLDSET_SAMPLE_HOUR!r} is not a crontab day of week (0-6, mon-sun) or hour (0-23): "
            f"{error}"
        ) from None


GOLDSET_SITE_URL = os.environ.get("GOLDSET_SITE_URL", "http://localhost:8000")
# `celery -A goldset beat` re-queues jobs whose message was lost or whose worker died.
# It also runs the daily index health check (issue 17), which records history and emails alerts,
# and, every minute, starts the evaluation of each new index build on the newest gold set.
# And it draws the production sample of every active sampling rule once a week, and every minute
# sends claimed questions whose lease lapsed with nothing graded back to the pool.
CELERY_BEAT_SCHEDULE = {
    "reconcile-jobs": {"task": "corpus.tasks.reconcile_jobs", "schedule": 60.0},
    "check-index-health": {"task": "health.tasks.check_index_health", "schedule": 86400.0},
    "evaluate-index-builds": {"task": "evaluation.tasks.evaluate_index_builds", "schedule": 60.0},
    "release-lapsed-leases": {"task": "labelling.tasks.release_lapsed_leases", "schedule": 60.0},
    "weekly-production-samples": {
        "task": "production.tasks.draw_weekly_samples",
        "schedule": _weekly_sample_schedule(),
    },
    "purge-expired-traces": {
        "task": "production.tasks.purge_expired_traces",
        "schedule": crontab(minute="30", hour="3"),
    },
}

# Production traces (production/services/traces.py): kept this many days unless a sample holds
# them (0: forever); the endpoint's body cap, batch cap and per-token request rate.
GOLDSET_TRACE_RETENTION_DAYS = _env_int("GOLDSET_TRACE_RETENTION_DAYS", 180)
GOLDSET_TRACE_MAX_BODY_BYTES = _env_int("GOLDSET_TRACE_MAX_BODY_BYTES", 5 * 2**20)
GOLDSET_TRACE_MAX_BATCH = _env_int("GOLDSET_TRACE_MAX_BATCH", 1000)
GOLDSET_TRACE_REQUESTS_PER_MINUTE = _env_int("GOLDSET_TRACE_REQUESTS_PER_MINUTE", 600)

# The cache holds sessions (see SESSION_ENGINE) and the trace endpoint's rate counters: Redis
# when there is one, so every web replica reads the same, its keys prefixed apart from Celery's;
# the process's memory otherwise (the quickstart, one web process).
if REDIS_URL:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": "goldset",
        }
    }
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

# Alert emails (index health). Unset in development: printed to the console.
EMAIL_BACKEND = os.environ.get(
    "EMAIL_BACKEND",
    "django.core.mail.backends.smtp.EmailBackend"
    if os.environ.get("EMAIL_HOST")
    else "django.core.mail.backends.console.EmailBackend",
)
EMAIL_HOST = os.environ.get("EMAIL_HOST", "localhost")
EMAIL_PORT = _env_int("EMAIL_PORT", 25)
DEFAULT_FROM_EMAIL = os.environ.get("DEFAULT_FROM_EMAIL", "goldset@localhost")
# Links in emails: the site's address as users reach it (no trailing slash).
GOLDSET_BASE_URL = os.environ.get("GOLDSET_BASE_URL", "").rstrip("/")

# Security. Cookies are secure whenever DEBUG is off; the CSP is enforced, never report-only.
SESSION_COOKIE_HTTPONLY = True
# Django's sessions in the database, read through the cache: losing the cache signs nobody out.
SESSION_ENGINE = "django.contrib.sessions.backends.cached_db"
SESSION_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_HTTPONLY = True  # htmx and grading.js take the token from the page, never the cookie
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
if not DEBUG:
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_SSL_REDIRECT = _env_bool("SECURE_SSL_REDIRECT", True)
    SECURE_HSTS_SECONDS = _env_int("SECURE_HSTS_SECONDS", 31536000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "img-src": ["'self'", "data:"],
        "object-src": ["'none'"],
        "base-uri": ["'none'"],
        "frame-ancestors": ["'none'"],
        "form-action": ["'self'"],
    }
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    # Library chatter logged on the root logger itself (onnxruntime's quantizer) is left out:
    # a filter of the logger, so it holds in a Celery worker too, whose handlers are its own.
    "filters": {"quiet_libraries": {"()": "goldset.log_filters.QuietLibraries"}},
    "root": {
        "handlers": ["console"],
        "level": os.environ.get("LOG_LEVEL", "INFO"),
        "filters": ["quiet_libraries"],
    },
    # Django's own "django" logger has a console handler too: without this its lines (the
    # runserver's "Watching for file changes") would print twice, once through the root.
    "loggers": {
        "django": {"handlers": [], "level": "INFO", "propagate": True},
        # One line per model load is noise in a command's or the quickstart's output.
        "sentence_transformers": {"level": "WARNING"},
        # Axes logs every log-in at INFO; failures and lockouts are WARNING and still show.
        "axes": {"level": "WARNING"},
    },
}
if CELERY_TASK_ALWAYS_EAGER:
    # Tasks run inside the command or request that queued it: "Task … succeeded" says nothing
    # the command does not print itself.
    LOGGING["loggers"]["celery.app.trace"] = {"level": "WARNING"}
