import json

from django import forms
from django.contrib import admin
from django.db.models import JSONField

from . import models
from .services import latest


class StrictJSONFormField(forms.JSONField):
    """Django's JSON form field, with every way json.loads fails as "Enter a valid JSON." (a form error):
    Django catches only JSONDecodeError, so a number past int()'s 4,300 digits (ValueError), nesting past
    the recursion limit (RecursionError) or NaN (refused by the database's JSON check) in a staff edit was a 500."""

    def to_python(self, value):
        try:
            converted = super().to_python(value)
            # NaN / Infinity parse but are no JSON: the database's JSON check refuses them (an IntegrityError).
            json.dumps(converted, allow_nan=False, cls=self.encoder)
        except (ValueError, RecursionError) as exc:  # (JSONDecodeError is a ValueError; ValidationError is not)
            raise forms.ValidationError(self.error_messages["invalid"], code="invalid", params={"value": value}) from exc
        return converted

    def bound_data(self, data, initial):
        try:
            return super().bound_data(data, initial)
        except (ValueError, RecursionError):
            return forms.fields.InvalidJSONInput(data)


class ModelAdmin(admin.ModelAdmin):
    """The site's admin pages: JSON fields reject what json.loads can't read as a form error."""

    formfield_overrides = {JSONField: {"form_class": StrictJSONFormField}}


@admin.register(models.Task)
class TaskAdmin(ModelAdmin):
    list_display = ("number", "api", "kernel", "status", "locked_reason")
    list_filter = ("kernel", "status")
    search_fields = ("api",)


@admin.register(models.Contributor)
class ContributorAdmin(ModelAdmin):
    list_display = ("login", "user")
    search_fields = ("login",)


@admin.register(models.Claim)
class ClaimAdmin(ModelAdmin):
    list_display = ("task", "contributor", "status", "source", "created", "withdrawn_at")
    list_filter = ("status", "source")
    search_fields = ("contributor__login", "task__api")


@admin.register(models.PullRequest)
class PullRequestAdmin(ModelAdmin):
    list_display = ("repo", "number", "title", "state", "author", "part")
    list_filter = ("repo", "state")
    search_fields = ("title",)
    filter_horizontal = ("tasks",)


@admin.register(models.FailingConfig)
class FailingConfigAdmin(ModelAdmin):
    list_display = ("task", "config", "category", "origin_date", "first_seen", "last_seen", "in_latest_report")
    list_filter = ("category", "in_latest_report", "task__kernel")
    search_fields = ("config",)


@admin.register(models.Event)
class EventAdmin(ModelAdmin):
    list_display = ("created", "task", "kind", "source", "source_ref", "actor")
    list_filter = ("kind", "source")


@admin.register(models.TestRun)
class TestRunAdmin(ModelAdmin):
    list_display = ("id", "lane", "state", "waiting", "paddle_version", "total", "done", "created")
    list_filter = ("lane", "state", "waiting")

    # A deleted run's configs get their newest verdict back from the runs left (services.latest).
    def delete_model(self, request, obj):
        latest.delete_runs(models.TestRun.objects.filter(pk=obj.pk))

    def delete_queryset(self, request, queryset):
        latest.delete_runs(queryset)

    def save_model(self, request, obj, form, change):  # a lane, release or version edited: its verdicts' rows
        super().save_model(request, obj, form, change)
        if change:
            latest.rebuild(obj.results.values_list("failing_config_id", flat=True))


@admin.register(models.ConfigResult)
class ConfigResultAdmin(ModelAdmin):
    list_display = ("run", "task", "status", "direction", "max_abs", "max_rel", "seconds")
    list_filter = ("status",)

    def delete_model(self, request, obj):
        latest.delete_results(models.ConfigResult.objects.filter(pk=obj.pk))

    def delete_queryset(self, request, queryset):
        latest.delete_results(queryset)

    def save_model(self, request, obj, form, change):  # a run, config or version edited: the rows of both configs
        before = models.ConfigResult.objects.filter(pk=obj.pk).values_list("failing_config_id", flat=True).first()
        super().save_model(request, obj, form, change)
        latest.rebuild({obj.failing_config_id, before} - {None})


for model in (models.WebhookDelivery, models.SyncCursor, models.IssueComment, models.WorkerHeartbeat):
    admin.site.register(model, ModelAdmin)
