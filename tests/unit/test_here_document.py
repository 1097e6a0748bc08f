"""What a remote shell request may carry as its stdin (ssh/here_document.py), run through a real `sh`."""

from __future__ import annotations

import base64
import subprocess

from app.services.ssh.here_document import END, LIMIT, here_document


def test_base64_lines_become_the_commands_stdin_in_a_real_shell() -> None:
    data = base64.b64encode(b"key\n" * 100) + b"\n" + base64.b64encode(b"second") + b"\n"
    here = here_document(data)
    assert here is not None
    # as the remote shell runs a request: eval of the command text, with its own stdin elsewhere
    command = "cat" + here
    out = subprocess.run(["sh", "-c", 'eval "$1" </dev/null', "sh", command + "\n"], capture_output=True, check=True)
    assert out.stdout == data


def test_what_cannot_be_a_here_document_goes_another_way() -> None:
    assert here_document(b"no newline at the end") is None
    assert here_document(b"tab\there\n") is None
    assert here_document("caf\u00e9\n".encode()) is None
    assert here_document(f"a\n{END}\nb\n".encode()) is None
    assert here_document(b"A" * LIMIT + b"\n") is None
    assert here_document(b"\n") == f" <<'{END}'\n\n{END}"
