from django.shortcuts import render

from .models import Task


def board(request):
    return render(request, "tracker/board.html", {"tasks": Task.objects.all()})
