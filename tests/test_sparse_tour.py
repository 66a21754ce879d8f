"""``python -m sparse``, the README's first command, runs its checks and passes."""
from sparse.__main__ import main


def test_tour_runs_and_reports(capsys):
    assert main() == 0
    text = capsys.readouterr().out
    assert "FAIL" not in text and "all checks passed" in text
    for part in ("COO reshape", "CSR reshape", "backward", "dense reshape", "expand", "repeat",
                 "speed"):
        assert part in text
