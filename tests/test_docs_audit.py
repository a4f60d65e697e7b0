"""What the documentation promises about the command line, checked against the command line
(a fresh-eyes audit of README.md and docs/*.md): error lines shown in docs/formats.md, option
texts that the docs' tables rely on."""
from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path

import pytest

from conftest import one_error_line, run_cli
from rankmap.profiler import collectives

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("args, option, written", [
    (["map", "ring4.csv", "--nodes", "n[1-2]", "--node-topology", "pack:2 core:1", "--out", "m", "--seed", "1e6"], "--seed", "1000000"),
    (["map", "ring4.csv", "--nodes", "n[1-2]", "--node-topology", "pack:2 core:1", "--out", "m", "--tries", "1e1"], "--tries", "10"),
    (["map", "ring4.csv", "--nodes", "n[1-2]", "--node-topology", "pack:2 core:1", "--out", "m", "--parallel",
      "2.0"],
     "--parallel", "2"),
    (["map", "ring4.csv", "--nodes", "n[1-2]", "--node-topology", "pack:2 core:1", "--out", "m",
      "--ranks-per-node", "1e0"],
     "--ranks-per-node", "1"),
    (["run", "-n", "1e3", "--", "true"], "--ntasks", "1000"),
    (["sbatch", "-n", "8", "-N", "2e0", "--out", "j", "--", "true"], "--nodes-count", "2"),
    (["show-profile", "run", "--top", "1e1"], "--top", "10"),
    (["tune-collectives", "-n", "1e2", "--out", "t.txt"], "--ntasks", "100"),
    (["platform", "desmos", "--cores", "8.0", "--out", "p"], "--cores", "8"),
])
def test_a_whole_number_option_in_exponent_form_is_named_as_such(tmp_path, args, option, written):
    """docs/formats.md (options): "a whole number written `1e6` where digits are expected is
    named as such". The integer options said "'1e6' is not a valid integer range"."""
    res = run_cli(*args, cwd=tmp_path)
    one_error_line(res, f"is not a whole number written in digits (write {written})")
    assert option in res.stderr


def test_whole_number_options_other_errors(tmp_path):
    """Out of range says the range (not "write 2000000000"); text and fractions are not whole numbers."""
    base = ["map", "ring4.csv", "--nodes", "n[1-2]", "--node-topology", "pack:2 core:1", "--out", "m"]
    one_error_line(run_cli(*base, "--seed", "2e9", cwd=tmp_path), "2000000000 is not in the range 0<=x<=1000000000")
    one_error_line(run_cli(*base, "--tries", "2.5", cwd=tmp_path), "'2.5' is not a whole number")
    one_error_line(run_cli(*base, "--tries", "abc", cwd=tmp_path), "'abc' is not a whole number")


@pytest.mark.parametrize("verb", ["map", "predict", "evaluate", "show-profile"])
def test_collective_model_help_lists_every_model(verb):
    """docs/formats.md lists the `smpi` model (the default for SMPI traces) and `--collectives smpi`
    is accepted, but the options' help left it out."""
    res = run_cli(verb, "--help")
    assert res.returncode == 0
    text = " ".join(res.stdout.split())
    listed = re.search(r"--collectives MODEL [^:]*: ([a-zA-Z0-9:\[\]\-, ]+)\.", text)
    assert listed, text
    names = {n.strip().split("[")[0] for n in listed.group(1).split(",")}
    assert names == set(collectives.MODELS), names


def _console_block(doc: Path, after: str) -> list[tuple[str, list[str]]]:
    """The ```console block after the line containing `after`: (command, output lines) pairs."""
    lines = doc.read_text().splitlines()
    start = next(i for i, ln in enumerate(lines) if after in ln)
    i = next(j for j in range(start, len(lines)) if lines[j].startswith("```console")) + 1
    out: list[tuple[str, list[str]]] = []
    while not lines[i].startswith("```"):
        if lines[i].startswith("$ "):
            out.append((lines[i][2:], []))
        else:
            out[-1][1].append(lines[i])
        i += 1
    return out


def test_formats_md_bad_input_block_is_what_rankmap_prints(tmp_path):
    """Every command of docs/formats.md's bad-input block prints the line the doc shows."""
    block = _console_block(ROOT / "docs" / "formats.md", "The inputs come from the repository's")
    bad = tmp_path / "bad"
    bad.mkdir()
    for name in ("negative-summed.csv", "bytes-1e308.csv", "ring4.csv", "levels-word.json"):
        shutil.copy(ROOT / "tests" / "data" / "bad-inputs" / name, bad)
    (bad / "t.csv").write_text("src,dst,bytes\n0,1,1000\n1,x,10\n")
    checked = 0
    for cmd, shown in block:
        argv = shlex.split(cmd)
        if argv[0] != "rankmap":
            continue                       # the setup lines (mkdir, cp, printf), done above
        res = run_cli(*argv[1:], cwd=bad)
        assert shown and res.returncode == 2, (cmd, res.stdout, res.stderr)
        assert res.stderr.strip().splitlines() == shown, (cmd, res.stderr)
        checked += 1
    assert checked == 7


def test_map_with_plots_names_the_png_files_it_wrote(tmp_path):
    """`rankmap map --plots`: the Written: line lists the figures too (it listed the text files only)."""
    ring4 = Path(__file__).parent / "data" / "bad-inputs" / "ring4.csv"
    res = run_cli("map", ring4, "--nodes", "n[1-2]", "--node-topology", "core:2", "--plots",
                  "--out", tmp_path / "m")
    assert res.returncode == 0, res.stderr
    out = " ".join(res.stdout.split())
    for png in sorted(p.name for p in (tmp_path / "m").glob("*.png")):
        assert png in out.replace(" ", ""), (png, out)


def test_profile_with_the_profiler_off_says_so_and_not_data_in_dir(tmp_path, monkeypatch):
    """RANKMAP_PROFILE=0: `rankmap profile` printed "...; data in DIR", then that DIR was removed
    (nothing recorded); now the run's line alone, and the error names the variable."""
    monkeypatch.setenv("RANKMAP_PROFILE", "0")
    res = run_cli("profile", "--launcher", "env", "--out", tmp_path / "p", "--", "true")
    assert res.returncode == 2
    assert "data in" not in res.stdout, res.stdout
    one_error_line(res, "RANKMAP_PROFILE=0 turned the profiler off")
    assert not (tmp_path / "p").exists()
