from django.apps import AppConfig


class AccountsConfig(AppConfig):
    """The operator's account commands. Listed before django.contrib.auth in INSTALLED_APPS: the first app that
    has a command of a name provides it, so this app's `createsuperuser` is the one manage.py runs."""

    name = "tracker.accounts"
    label = "tracker_accounts"
    verbose_name = "Board accounts (operator commands)"
