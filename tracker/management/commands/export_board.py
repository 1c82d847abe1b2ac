from django.core.management.base import BaseCommand

from tracker.services.board_export import export_board


class Command(BaseCommand):
    help = ("Print the tracking issue's task table in the community bot's markdown format, followed by "
            "the 看板信息 and 统计信息 sections. Same board state → byte-identical output.")

    def add_arguments(self, parser):
        parser.add_argument("--output", "-o", default=None, help="write to this file instead of stdout")

    def handle(self, *args, output=None, **options):
        text = export_board()
        if output:
            with open(output, "w", encoding="utf-8", newline="\n") as handle:
                handle.write(text)
        else:
            self.stdout.write(text, ending="")
