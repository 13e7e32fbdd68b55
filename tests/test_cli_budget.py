import subprocess
import sys

from docket.demo import REFUND_QUESTION, nimbus_path


def run(*args):
    return subprocess.run([sys.executable, "-m", "docket", *args], capture_output=True, text=True, timeout=60)


def test_budget_arithmetic_matches_the_spec():
    out = run("budget", "--input-target", "6000", "--system", "650", "--history", "900", "--question-tokens", "120",
              "--tags", "35", "--chunk-tokens", "350", "--price", "3", "--queries-per-day", "50000")
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert "4,330" in text
    assert "passages if you forget the tags: 12" in text and "290" in text
    assert "passages that really fit (350 + 35 tags): 11" in text
    assert "USD 150/day" in text and "USD 4,500/month" in text


def test_budget_shows_passages_that_fit():
    out = run("budget", "--input-target", "800", "--history", "0", "--store", nimbus_path(), "--question", REFUND_QUESTION)
    assert out.returncode == 0, out.stderr
    assert "pol3-3, pol3-4, pol3-5" in out.stdout


def test_budget_too_small_is_a_clear_error():
    out = run("budget", "--input-target", "500", "--history", "900")
    assert out.returncode == 2 and "--input-target" in out.stderr


def test_budget_counts_the_system_text_of_the_policys_format(tmp_path):
    """The system rules name the format's own marks, so their size follows `render.format`."""
    import re

    sizes = {}
    for fmt in ("xml", "lines"):
        pol = tmp_path / f"{fmt}.toml"
        pol.write_text(f'[render]\nformat = "{fmt}"\n')
        out = run("budget", "--input-target", "6000", "--history", "0", "--policy", str(pol))
        assert out.returncode == 0, out.stderr
        sizes[fmt] = re.search(r"system rules \+ format\D*([\d,]+)", out.stdout).group(1)
    assert sizes["xml"] != sizes["lines"]
