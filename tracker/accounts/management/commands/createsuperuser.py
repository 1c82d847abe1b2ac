"""Django's createsuperuser, with the password validators applied to DJANGO_SUPERUSER_PASSWORD under --noinput.

Django validates a password typed at the prompt but takes the environment's as it is: `createsuperuser --noinput`
with DJANGO_SUPERUSER_PASSWORD=a made a staff account with the password `a`. Here it is refused with the
validators' messages (AUTH_PASSWORD_VALIDATORS) and no account is made."""
import os

from django.contrib.auth.management.commands import createsuperuser
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.management.base import CommandError


class Command(createsuperuser.Command):
    def handle(self, *args, **options):
        password = os.environ.get("DJANGO_SUPERUSER_PASSWORD")
        if not options["interactive"] and password is not None:
            try:
                validate_password(password, self._user_for_validation(options))
            except ValidationError as error:
                raise CommandError("DJANGO_SUPERUSER_PASSWORD refused: " + " ".join(error.messages)) from None
        return super().handle(*args, **options)

    def _user_for_validation(self, options):
        """An unsaved user with the name and required fields the command will use (the similarity validator
        compares the password with them)."""
        fields = {}
        for name in (self.UserModel.USERNAME_FIELD, *self.UserModel.REQUIRED_FIELDS):
            value = options.get(name) or os.environ.get("DJANGO_SUPERUSER_" + name.upper())
            if value and not self.UserModel._meta.get_field(name).many_to_many:
                fields[name] = value
        return self.UserModel(**fields)
