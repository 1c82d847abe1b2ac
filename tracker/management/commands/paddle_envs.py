"""Per-release Paddle environments: python manage.py paddle_envs add 3.0.0 [3.2.2 ...] | add --wheel FILE_OR_URL |
add 3.3.1 --torch 2.12.0 | list | remove 3.0.0 [--torch V]."""
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from tracker.services import paddle_envs


def _size(n: int) -> str:
    return f"{n / 2**30:.2f} GiB" if n >= 2**30 else f"{n / 2**20:.0f} MiB"


class Command(BaseCommand):
    help = "Add, list or remove isolated Paddle environments (one per release) that re-test runs can use."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        add = sub.add_parser("add", help="build the env of each release (idempotent)")
        add.add_argument("versions", nargs="*", metavar="VERSION",
                         help="e.g. 3.0.0 3.2.2 (none: the PADDLE_RELEASES setting / environment variable)")
        add.add_argument("--wheel", action="append", default=[], metavar="FILE_OR_URL",
                         help="a Paddle wheel (a nightly or post build such as 3.3.1.post20260403): its version, "
                              "date and commit are read from the wheel, and the env is named by its version")
        add.add_argument("--torch", metavar="V", default="",
                         help="pair the release with Torch V instead of the project's own (an env of its own, "
                              "<release>+torch<V>, for retest --torch V; other Torch builds carry ~4 GB of CUDA "
                              "libraries on Linux, and run on the CPU)")
        add.add_argument("--tool", choices=["uv", "pip"],
                         help="default: uv when its binary is found, else venv+pip; pip with --torch (it reads this "
                              "host's pip configuration: the indexes where other Torch builds are found)")
        sub.add_parser("list", help="installed envs with versions and disk used")
        remove = sub.add_parser("remove", help="delete the env of each release")
        remove.add_argument("versions", nargs="+", metavar="VERSION")
        remove.add_argument("--torch", metavar="V", default="", help="the env pairing the release with Torch V")

    def handle(self, *args, **options):
        action = options["action"]
        if action == "list":
            return self._list()
        failed = []
        versions = options["versions"]
        if action == "add" and options["wheel"]:
            if options["torch"]:
                raise CommandError("--torch pairs a release with another Torch; a wheel's env takes the project's")
            return self._add_wheels(options["wheel"], versions, options.get("tool"))
        if action == "add" and not versions:
            versions = list(settings.PADDLE_RELEASES)
            if not versions:
                self.stdout.write("no release named and PADDLE_RELEASES is empty: only the main env is used")
        for version in versions:
            try:
                if action == "add":
                    env, created = paddle_envs.add(version, tool=options.get("tool"), torch=options["torch"])
                    if created:
                        self.stdout.write(f"Paddle {version}: built with {env.tool} in {env.build_seconds:.0f} s at "
                                          f"{env.path} ({_size(env.disk_bytes())}; paddle {env.paddle_version} "
                                          f"{env.paddle_commit[:10]}, torch {env.torch_version}, numpy {env.numpy_version})")
                    else:
                        self.stdout.write(f"Paddle {env.key}: already installed at {env.path}")
                else:
                    paddle_envs.remove(version, options["torch"])
                    self.stdout.write(f"Paddle {paddle_envs.env_key(version, options['torch'])}: removed")
            except paddle_envs.EnvError as exc:
                failed.append(f"Paddle {version}: {exc}")
        if failed:
            raise CommandError("\n".join(failed))

    def _add_wheels(self, wheels: list[str], versions: list[str], tool):
        if versions:
            raise CommandError("name releases or --wheel files, not both (a wheel names its own version)")
        failed = []
        for source in wheels:
            try:
                env, created = paddle_envs.add_wheel(source, tool=tool)
            except paddle_envs.EnvError as exc:
                failed.append(f"wheel {source}: {exc}")
                continue
            what = (f"built with {env.tool} in {env.build_seconds:.0f} s at {env.path}" if created
                    else f"already installed at {env.path}")
            self.stdout.write(f"Paddle {env.version} (build of {env.build_date or 'an unknown date'}, commit "
                              f"{env.paddle_commit[:10]}): {what}")
        if failed:
            raise CommandError("\n".join(failed))

    def _list(self):
        main = paddle_envs.main_env()
        # "shared": files hard-linked from uv's cache, stored once for every env that holds them.
        self.stdout.write(f"{'release':<9} {'disk':>10} {'shared':>10}  {'paddle (full, commit)':<32} {'torch':<14} path")
        self.stdout.write(f"{main.version:<9} {'(main)':>10} {'':>10}  {main.version:<32} {'':<14} {main.path}")
        for env in paddle_envs.installed():
            total, shared = env.disk_usage()
            self.stdout.write(f"{env.key:<9} {_size(total):>10} {_size(shared):>10}  "
                              f"{(env.paddle_version + ' ' + env.paddle_commit[:10]):<32} {env.torch_version:<14} {env.path}")
