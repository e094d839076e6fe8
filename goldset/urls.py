from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.templatetags.static import static
from django.urls import include, path
from django.views.generic import RedirectView

urlpatterns = [
    path(
        "accounts/login/",
        auth_views.LoginView.as_view(redirect_authenticated_user=True),
        name="login",
    ),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    # Everyone changes their own password (old one first); accounts are made by admins only.
    path(
        "accounts/password/",
        auth_views.PasswordChangeView.as_view(),
        name="password_change",
    ),
    path(
        "accounts/password/done/",
        auth_views.PasswordChangeDoneView.as_view(),
        name="password_change_done",
    ),
    path("admin/", admin.site.urls),
    # Browsers ask for /favicon.ico on responses without a page (plain text, downloads).
    path(
        "favicon.ico",
        RedirectView.as_view(url=static("goldset/favicon.svg"), permanent=True),
        name="favicon",
    ),
    path("", include("labelling.urls")),
    path("", include("corpus.urls")),
    path("", include("answers.urls")),
    path("", include("judges.urls")),
    path("", include("evaluation.urls")),
    path("", include("health.urls")),
    path("", include("production.urls")),
]

# A refused action gets the project's menu and an explanation (corpus/team_views.py).
handler403 = "corpus.team_views.permission_denied"
# Too many files or too much pasted text: say what the limit is (goldset/views.py).
handler400 = "goldset.views.bad_request"
# A database connection lost outside a view: 503 with Retry-After, as inside one.
handler500 = "goldset.views.server_error"
