"""The README keeps exactly two set-up commands, and .ci/run runs the second one verbatim."""
import pathlib
import re

ROOT = pathlib.Path(__file__).parent.parent


def _commands():
    text = (ROOT / "README.md").read_text()
    return [b.strip() for b in re.findall(r"```bash\n(.*?)```", text, flags=re.S)]


def test_readme_has_two_setup_commands():
    commands = _commands()
    assert len(commands) == 2, commands
    assert "minitorch-edge demo" in commands[0]
    assert "pytest" in commands[1]


def test_ci_runs_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert _commands()[1] in [line.strip() for line in ci]


def test_read_the_code_paths_exist():
    text = (ROOT / "README.md").read_text()
    section = text.split("## Read the code", 1)[1].split("\n## ", 1)[0]
    for path in re.findall(r"`((?:minitorch_edge|native)/[^`]*?\.(?:py|c|md))`", section):
        assert (ROOT / path).exists(), path
