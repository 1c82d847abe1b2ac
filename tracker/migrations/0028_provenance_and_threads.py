from django.db import migrations, models
import django.db.models.deletion


class Migration(migrations.Migration):
    dependencies = [("tracker", "0023_external_runs")]

    operations = [
        migrations.CreateModel(
            name="Provenance",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("fingerprint", models.CharField(max_length=64, unique=True)),
                ("paddle_version", models.CharField(blank=True, default="", max_length=50)),
                ("paddle_commit", models.CharField(blank=True, default="", max_length=64)),
                ("torch_version", models.CharField(blank=True, default="", max_length=50)),
                ("numpy_version", models.CharField(blank=True, default="", max_length=50)),
                ("threads", models.PositiveSmallIntegerField(blank=True, null=True)),
                ("thread_detail", models.JSONField(blank=True, default=dict)),
                ("cpu_capability", models.JSONField(blank=True, default=dict)),
                ("host", models.CharField(blank=True, default="", max_length=200)),
                ("created", models.DateTimeField(auto_now_add=True)),
            ],
        ),
        migrations.AddField(
            model_name="configresult", name="provenance",
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL,
                                    related_name="results", to="tracker.provenance"),
        ),
        # Runs stored before runs pinned their threads keep None (their workers had cores ÷ workers); new runs: 1.
        migrations.AddField(model_name="testrun", name="threads",
                            field=models.PositiveSmallIntegerField(blank=True, null=True)),
        migrations.AlterField(model_name="testrun", name="threads",
                              field=models.PositiveSmallIntegerField(blank=True, default=1, null=True)),
    ]
