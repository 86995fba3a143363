"""Every case of the error catalogue (`error_catalogue.py`) fails as it says: its exit status, one clean
`flexflow_keras: error:` block holding its message fragment, no traceback; and `docs/errors.md` is what
the generator writes from the messages of this same run."""

import pytest
from error_catalogue import CASES, DOC, PREFIX, SETUPS, command, fragments, is_hint, render, run_all


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    return run_all(CASES, tmp_path_factory.mktemp("errors"))


def test_cases_are_well_formed():
    ids = [c.id for c in CASES]
    assert len(set(ids)) == len(ids), "case ids must be unique"
    for c in CASES:
        assert c.exit_code in (1, 2) and all(fragments(c)) and fragments(c) and c.title
        assert c.setup is None or c.setup in SETUPS, f"{c.id}: no @setup function named {c.setup!r}"
        assert c.code is None or "{tmp}/script.py" in c.args, f"{c.id}: code= runs as {{tmp}}/script.py"


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_case_fails_with_its_message(case, results):
    r = results[case.id]
    detail = f"{command(case)}\nexit {r.returncode}\nstdout:\n{r.stdout[-2000:]}\nstderr:\n{r.stderr[-3000:]}"
    assert r.returncode == case.exit_code, detail
    assert PREFIX in r.stderr and r.block is not None, detail
    assert "Traceback" not in r.stderr, detail
    assert all(f in r.block for f in fragments(case)), detail
    assert is_hint(r.block.splitlines()[-1]), detail  # one block: the message, then the --debug hint
    assert sum(line.startswith(PREFIX) for line in r.stderr.splitlines()) == 1, detail


def test_docs_errors_md_is_what_the_cases_print(results):
    expected = render(results)
    current = DOC.read_text() if DOC.exists() else ""
    assert current == expected, ("docs/errors.md is out of date; regenerate it with "
                                 "`python tests/e2e/error_catalogue.py --write docs/errors.md`")
