"""Ports chosen for the processes Allot and its tests start stay out of the ephemeral range,
where an outgoing connection could take them before the process binds (CI's lab failure)."""

import socket

from agents.ports import ephemeral_range, free_port, port_is_free


def test_a_chosen_port_is_below_the_ephemeral_range_and_free():
    low, high = ephemeral_range()
    assert 1024 <= low < high
    for _ in range(20):
        port = free_port()
        assert port < low
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", port))  # free as promised


def test_a_port_with_a_listener_is_not_free():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", free_port()))
        sock.listen()
        assert not port_is_free(sock.getsockname()[1])
