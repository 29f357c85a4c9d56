"""Waiting for the Go binaries .ci/run builds in the background on a new machine
(tests/binaries.py), and the order that lets the tests needing none of them run meanwhile."""

from __future__ import annotations

import threading

import pytest

from tests.binaries import wait_for_build


def test_without_a_background_build_nothing_waits(monkeypatch):
    monkeypatch.delenv("ALLOT_BUILD_STATUS", raising=False)
    wait_for_build(wait_s=0)


def test_a_test_waits_until_the_build_writes_its_exit_code(monkeypatch, tmp_path):
    status = tmp_path / "build.status"
    monkeypatch.setenv("ALLOT_BUILD_STATUS", str(status))
    writer = threading.Timer(0.5, status.write_text, args=("0\n",))
    writer.start()
    wait_for_build(wait_s=60)
    assert status.read_text() == "0\n"  # returned only once the build had ended


def test_a_failed_build_fails_the_test_with_the_end_of_its_log(monkeypatch, tmp_path):
    status = tmp_path / "build.status"
    (tmp_path / "build.log").write_text("go: module lookup disabled\nkube-apiserver: failed\n")
    status.write_text("1\n")
    monkeypatch.setenv("ALLOT_BUILD_STATUS", str(status))
    ended = r"(?s)failed \(exit 1\):\n.*kube-apiserver: failed"
    with pytest.raises(pytest.fail.Exception, match=ended):
        wait_for_build(wait_s=60)


def test_a_build_that_never_ends_fails_rather_than_hangs(monkeypatch, tmp_path):
    monkeypatch.setenv("ALLOT_BUILD_STATUS", str(tmp_path / "build.status"))
    with pytest.raises(pytest.fail.Exception, match="still going"):
        wait_for_build(wait_s=0)


def test_the_tests_that_run_built_binaries_are_collected_last(request):
    items = request.session.items
    built = [i for i, item in enumerate(items) if item.get_closest_marker("k8s")
             or item.get_closest_marker("built")]  # fmt: skip
    if built:  # a run of the whole suite, or of a part with some of them
        assert built == list(range(len(items) - len(built), len(items)))
