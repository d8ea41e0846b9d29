"""Code extraction from LLM replies: pure, table-driven."""

from __future__ import annotations

import pytest

from generator.extract import extract_code, extract_template, fenced_blocks, strip_main_guard

CHECK = "def evaluate(model_output: str) -> bool:\n    return 'yes' in model_output\n"


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        pytest.param(f"```python\n{CHECK}```", CHECK, id="one fence"),
        pytest.param(
            f"Sure! Here it is:\n\n```python\n{CHECK}```\n\nIt checks yes.",
            CHECK,
            id="prose around",
        ),
        pytest.param(f"```py\n{CHECK}```", CHECK, id="py tag"),
        pytest.param(f"```\n{CHECK}```", CHECK, id="untagged fence"),
        pytest.param(f"~~~python\n{CHECK}~~~", CHECK, id="tilde fence"),
        pytest.param(f"```python\n{CHECK}", CHECK, id="unclosed fence"),
        pytest.param(CHECK, CHECK, id="bare"),
        pytest.param(
            f"Here is the check:\n\n{CHECK}\nThis returns True for yes.",
            CHECK,
            id="bare with prose",
        ),
        pytest.param(
            f"<think>use ```python\nx=1\n``` maybe</think>\n```python\n{CHECK}```",
            CHECK,
            id="think section",
        ),
        pytest.param("I cannot write that.", None, id="no code"),
        pytest.param("", None, id="empty"),
    ],
)
def test_extract_code(reply: str, expected: str | None) -> None:
    assert extract_code(reply) == expected


def test_last_entrypoint_block_wins() -> None:
    first = "def evaluate(model_output):\n    return True\n"
    reply = f"```python\n{first}```\nOops, corrected:\n```python\n{CHECK}```"
    assert extract_code(reply) == CHECK


def test_helper_block_is_joined_and_usage_dropped() -> None:
    helper = "import re\n\nWORD = re.compile(r'\\w+')\n"
    entry = "def evaluate(model_output: str) -> int:\n    return len(WORD.findall(model_output))\n"
    usage = "print(evaluate('a b'))\n"
    reply = f"```python\n{helper}```\n```python\n{entry}```\nUsage:\n```python\n{usage}```"
    code = extract_code(reply)
    assert code is not None
    assert code.startswith("import re")
    assert "def evaluate" in code
    assert "print(" not in code


def test_unrelated_helper_is_not_joined() -> None:
    helper = "def unused():\n    return 1\n"
    reply = f"```python\n{helper}```\n```python\n{CHECK}```"
    assert extract_code(reply) == CHECK


def test_non_python_blocks_are_ignored() -> None:
    reply = f'```bash\npip install x\n```\n```json\n{{"a": 1}}\n```\n```python\n{CHECK}```'
    assert extract_code(reply) == CHECK


def test_class_form_is_an_entrypoint() -> None:
    code = (
        "from engine.checks import CodeBasedCheck\n\n"
        "class Check(CodeBasedCheck):\n"
        "    @staticmethod\n"
        "    def evaluate(model_output: str) -> bool:\n"
        "        return True\n"
    )
    assert extract_code(f"text\n```python\n{code}```") == code


def test_main_guard_is_stripped() -> None:
    source = CHECK + "\nif __name__ == '__main__':\n    print(evaluate('yes'))\n"
    assert strip_main_guard(source) == CHECK
    assert extract_code(f"```python\n{source}```") == CHECK


def test_unparseable_code_is_still_returned_for_the_validator() -> None:
    broken = "def evaluate(model_output) -> bool\n    return True\n"
    assert extract_code(f"```python\n{broken}```") == broken


def test_fenced_blocks_languages() -> None:
    blocks = fenced_blocks("```Python\na\n```\ntext\n```text\nb\n```")
    assert [(b.lang, b.body) for b in blocks] == [("python", "a\n"), ("text", "b\n")]


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("```text\nRate {model_output}.\n```", "Rate {model_output}."),
        ("Template:\n```\nIs {model_output} polite?\n```\nDone.", "Is {model_output} polite?"),
        ("Is {model_output} polite?", "Is {model_output} polite?"),
        ("  ", None),
    ],
)
def test_extract_template(reply: str, expected: str | None) -> None:
    assert extract_template(reply) == expected
