"""`make unit` keeps the tests that share a local Ray instance, and the site's build, each on one xdist worker
(tests/conftest.py carries out `--dist loadgroup` by file, since xdist's own group marks do nothing under pytest 9)."""

from __future__ import annotations

from pathlib import Path

from conftest import XDIST_GROUPS, xdist_scope

TESTS = Path(__file__).resolve().parent


def test_each_group_file_exists_so_a_rename_cannot_drop_it_silently():
    assert sorted(f for f in XDIST_GROUPS if not (TESTS / f).exists()) == []


def test_a_groups_tests_share_one_work_unit_and_the_others_stand_alone():
    assert xdist_scope("tests/test_ray.py::test_a") == xdist_scope("tests/test_flower.py::test_b[fedavg]") == "ray"
    assert xdist_scope("tests/test_site.py::test_pages_read_top_to_bottom") == "site"
    alone = ["tests/test_tuning.py::test_x", "tests/test_tuning.py::test_y[1]", "tests/test_tuning.py::test_y[2]"]
    assert [xdist_scope(n) for n in alone] == alone
