from django.contrib import admin

from . import models


@admin.register(models.Task)
class TaskAdmin(admin.ModelAdmin):
    list_display = ("number", "api", "kernel", "status", "locked_reason")
    list_filter = ("kernel", "status")
    search_fields = ("api",)


@admin.register(models.Contributor)
class ContributorAdmin(admin.ModelAdmin):
    list_display = ("login", "user")
    search_fields = ("login",)


@admin.register(models.Claim)
class ClaimAdmin(admin.ModelAdmin):
    list_display = ("task", "contributor", "status", "source", "created", "withdrawn_at")
    list_filter = ("status", "source")
    search_fields = ("contributor__login", "task__api")


@admin.register(models.PullRequest)
class PullRequestAdmin(admin.ModelAdmin):
    list_display = ("repo", "number", "title", "state", "author", "part")
    list_filter = ("repo", "state")
    search_fields = ("title",)
    filter_horizontal = ("tasks",)


@admin.register(models.FailingConfig)
class FailingConfigAdmin(admin.ModelAdmin):
    list_display = ("task", "config", "category", "origin_date", "first_seen", "last_seen", "in_latest_report")
    list_filter = ("category", "in_latest_report", "task__kernel")
    search_fields = ("config",)


@admin.register(models.Event)
class EventAdmin(admin.ModelAdmin):
    list_display = ("created", "task", "kind", "source", "source_ref", "actor")
    list_filter = ("kind", "source")


@admin.register(models.TestRun)
class TestRunAdmin(admin.ModelAdmin):
    list_display = ("id", "lane", "state", "paddle_version", "total", "done", "created")
    list_filter = ("lane", "state")


@admin.register(models.ConfigResult)
class ConfigResultAdmin(admin.ModelAdmin):
    list_display = ("run", "task", "status", "direction", "max_abs", "max_rel", "seconds")
    list_filter = ("status",)


for model in (models.WebhookDelivery, models.SyncCursor, models.IssueComment, models.WorkerHeartbeat):
    admin.site.register(model)
