"""Paddle release names order by their numbers (apitester.builds.version_key), a suffix ignored."""
from apitester.builds import version_key


def test_release_names_order_by_their_numbers():
    names = ["3.10.0", "3.9.1", "3.3.1+cu118", "3.0.0-rc1", "2.6.2", "", "3.3.1"]
    assert sorted(names, key=version_key) == ["", "2.6.2", "3.0.0-rc1", "3.3.1+cu118", "3.3.1", "3.9.1", "3.10.0"]
    assert version_key("3.3.1+cu118") == version_key("3.3.1") == (3, 3, 1)
    assert version_key(None) == version_key("") < version_key("0.0.1")  # no version sorts first
