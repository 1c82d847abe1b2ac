# Each config's newest verdict per (task, lane, release, Paddle version): the table the "latest" readers read (#45),
# filled here from the stored results (services.latest.fill with this migration's models).

import django.db.models.deletion
from django.db import migrations, models


def fill_latest(apps, schema_editor):
    from tracker.services.latest import fill

    fill(apps.get_model("tracker", "ConfigResult"), apps.get_model("tracker", "LatestResult"))


class Migration(migrations.Migration):

    dependencies = [
        ('tracker', '0029_run_torch'),
    ]

    operations = [
        migrations.CreateModel(
            name='LatestResult',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('lane', models.CharField(max_length=3)),
                ('release', models.CharField(blank=True, default='', max_length=50)),
                ('version', models.CharField(blank=True, default='', max_length=50)),
                ('status', models.CharField(max_length=30)),
                ('exact', models.BooleanField(blank=True, null=True)),
                ('failing_config', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='tracker.failingconfig')),
                ('result', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='tracker.configresult')),
                ('run', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='tracker.testrun')),
                ('task', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='tracker.task')),
            ],
            options={
                'indexes': [models.Index(fields=['task', 'lane'], name='latest_task_lane')],
                'constraints': [models.UniqueConstraint(fields=('failing_config', 'task', 'lane', 'release', 'version'), name='one_latest_per_config_key')],
            },
        ),
        migrations.RunPython(fill_latest, migrations.RunPython.noop),
    ]
