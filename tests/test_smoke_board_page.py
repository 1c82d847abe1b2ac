import pytest

from tracker.models import Task


@pytest.mark.django_db
def test_board_page_lists_tasks(client):
    Task.objects.create(number=1, api="paddle.add_n", kernel="CPU")
    response = client.get("/")
    assert response.status_code == 200
    assert "paddle.add_n" in response.content.decode()
