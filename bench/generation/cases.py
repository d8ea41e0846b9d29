"""The generation benchmark's cases: a description, flags, a score type, labelled examples
given to the generator, held-back rows it never sees, and a reference check.

The reference checks are not shown to the LLM; ``--self-test`` replays them through
the fake server to prove every case is consistent (they validate under the restricted
policy and agree with their own examples and held-back rows).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Case:
    id: str
    description: str
    output_data_type: str
    examples: list[dict[str, Any]]
    held_out: list[dict[str, Any]]
    reference: str
    requires_scenario_input: bool = False
    requires_scenario_result: bool = False
    tags: tuple[str, ...] = field(default=())


def ex(model_output: str, expected: Any, **row: Any) -> dict[str, Any]:
    """A labelled row."""
    return {"row": {"model_output": model_output, **row}, "expected": expected}


CASES: list[Case] = [
    Case(
        "contains_expected_city",
        "The answer names the expected city (scenario_result), ignoring case.",
        "bool",
        [
            ex("It is Paris.", True, scenario_result="Paris"),
            ex("Lyon", False, scenario_result="Paris"),
        ],
        [
            ex("paris, of course", True, scenario_result="Paris"),
            ex("ROME!", True, scenario_result="Rome"),
            ex("Madrid", False, scenario_result="Rome"),
        ],
        "def evaluate(model_output: str, scenario_result: str) -> bool:\n"
        "    return str(scenario_result).lower() in model_output.lower()\n",
        requires_scenario_result=True,
    ),
    Case(
        "short_answer",
        "The output has fewer than 20 words (words are separated by whitespace).",
        "bool",
        [ex("Short and sweet.", True), ex("word " * 25, False)],
        [ex("word " * 19, True), ex("word " * 20, False), ex("", True)],
        "def evaluate(model_output: str) -> bool:\n    return len(model_output.split()) < 20\n",
    ),
    Case(
        "word_count",
        "Count the words of the output (whitespace-separated tokens).",
        "int",
        [ex("one two three", 3), ex("", 0)],
        [ex("  spaced   out  words ", 3), ex("a\nb\tc d", 4), ex("single", 1)],
        "def evaluate(model_output: str) -> int:\n    return len(model_output.split())\n",
    ),
    Case(
        "is_json",
        "The output is valid JSON (any JSON value).",
        "bool",
        [ex('{"a": 1}', True), ex("not json", False)],
        [ex("[1, 2, 3]", True), ex("{'a': 1}", False), ex("42", True), ex("", False)],
        "import json\n\n"
        "def evaluate(model_output: str) -> bool:\n"
        "    try:\n        json.loads(model_output)\n    except ValueError:\n        return False\n"
        "    return True\n",
    ),
    Case(
        "json_has_name_and_age",
        'The output is a JSON object with both keys "name" and "age".',
        "bool",
        [ex('{"name": "Ann", "age": 3}', True), ex('{"name": "Ann"}', False)],
        [
            ex('{"age": 1, "name": "B", "x": 0}', True),
            ex('["name", "age"]', False),
            ex("nope", False),
        ],
        "import json\n\n"
        "def evaluate(model_output: str) -> bool:\n"
        "    try:\n        data = json.loads(model_output)\n"
        "    except ValueError:\n        return False\n"
        '    return isinstance(data, dict) and "name" in data and "age" in data\n',
    ),
    Case(
        "starts_with_capital",
        "The output's first non-whitespace character is an uppercase letter.",
        "bool",
        [ex("Hello there", True), ex("hello there", False)],
        [ex("  Indented", True), ex("123 go", False), ex("", False)],
        "def evaluate(model_output: str) -> bool:\n"
        "    text = model_output.lstrip()\n"
        "    return bool(text) and text[0].isupper()\n",
    ),
    Case(
        "ends_with_punctuation",
        "The output, ignoring trailing whitespace, ends with '.', '!' or '?'.",
        "bool",
        [ex("Done.", True), ex("Done", False)],
        [ex("Really?  \n", True), ex("Wow!", True), ex("ok,", False), ex("", False)],
        "def evaluate(model_output: str) -> bool:\n"
        '    return model_output.rstrip().endswith((".", "!", "?"))\n',
    ),
    Case(
        "no_apology",
        "The output does not apologise: it contains neither 'sorry' nor 'apologize'/'apologise' "
        "(any case).",
        "bool",
        [ex("Here is the answer.", True), ex("Sorry, I can't.", False)],
        [ex("I APOLOGIZE for that", False), ex("We apologise.", False), ex("All good", True)],
        "def evaluate(model_output: str) -> bool:\n"
        "    text = model_output.lower()\n"
        '    return not any(w in text for w in ("sorry", "apologize", "apologise"))\n',
    ),
    Case(
        "exact_match_normalised",
        "The output equals scenario_result after stripping surrounding whitespace and lowering "
        "case on both.",
        "bool",
        [
            ex(" Paris ", True, scenario_result="paris"),
            ex("Paris.", False, scenario_result="Paris"),
        ],
        [
            ex("NEW YORK", True, scenario_result="New York"),
            ex("New  York", False, scenario_result="New York"),
            ex("\tx\n", True, scenario_result="X"),
        ],
        "def evaluate(model_output: str, scenario_result: str) -> bool:\n"
        "    return model_output.strip().lower() == str(scenario_result).strip().lower()\n",
        requires_scenario_result=True,
    ),
    Case(
        "first_number_matches",
        "The first number in the output (integer or decimal, optionally negative) equals the "
        "number in scenario_result, within 1e-6. No number in the output: false.",
        "bool",
        [
            ex("The answer is 42.", True, scenario_result="42"),
            ex("About 41 or 42", False, scenario_result="42"),
        ],
        [
            ex("x = -3.50 units", True, scenario_result="-3.5"),
            ex("no digits here", False, scenario_result="1"),
            ex("7", True, scenario_result=7),
        ],
        "import re\n\n"
        "def evaluate(model_output: str, scenario_result) -> bool:\n"
        '    match = re.search(r"-?\\d+(?:\\.\\d+)?", model_output)\n'
        "    if match is None:\n        return False\n"
        "    return abs(float(match.group(0)) - float(scenario_result)) <= 1e-6\n",
        requires_scenario_result=True,
    ),
    Case(
        "bullet_count",
        "Count the lines that are bullet items: after leading spaces they start with '- ' or '* '.",
        "int",
        [ex("- a\n- b\ntext", 2), ex("no bullets", 0)],
        [ex("  * one\n* two\n-three\n- four", 3), ex("", 0), ex("- only", 1)],
        "def evaluate(model_output: str) -> int:\n"
        "    lines = model_output.splitlines()\n"
        '    return sum(1 for line in lines if line.lstrip().startswith(("- ", "* ")))\n',
    ),
    Case(
        "has_email",
        "The output contains an email address (something@domain.tld).",
        "bool",
        [ex("Write to ann@example.com today", True), ex("no contact", False)],
        [ex("a.b+c@mail.co.uk", True), ex("at @ sign only", False), ex("x@y", False)],
        "import re\n\n"
        "def evaluate(model_output: str) -> bool:\n"
        '    return re.search(r"[\\w.+-]+@[\\w-]+(\\.[\\w-]+)+", model_output) is not None\n',
    ),
    Case(
        "no_url",
        "The output contains no http:// or https:// URL.",
        "bool",
        [ex("see the docs", True), ex("see https://example.com", False)],
        [ex("HTTP://X.ORG", False), ex("http is a protocol", True), ex("ftp://x", True)],
        "def evaluate(model_output: str) -> bool:\n"
        "    text = model_output.lower()\n"
        '    return "http://" not in text and "https://" not in text\n',
    ),
    Case(
        "length_ratio",
        "The ratio of the output's length in characters to scenario_input's length; 0.0 when "
        "scenario_input is empty.",
        "float",
        [ex("abcd", 2.0, scenario_input="ab"), ex("a", 0.25, scenario_input="abcd")],
        [
            ex("abc", 1.0, scenario_input="xyz"),
            ex("abc", 0.0, scenario_input=""),
            ex("", 0.0, scenario_input="q"),
        ],
        "def evaluate(model_output: str, scenario_input: str) -> float:\n"
        "    text = str(scenario_input)\n"
        "    return len(model_output) / len(text) if text else 0.0\n",
        requires_scenario_input=True,
    ),
    Case(
        "keyword_coverage",
        "The fraction of the keywords listed in metadata['keywords'] (a list of strings) that "
        "appear in the output, ignoring case; 1.0 when there are no keywords.",
        "float",
        [
            ex("Apples and pears", 0.5, metadata={"keywords": ["apple", "plum"]}),
            ex("anything", 1.0, metadata={}),
        ],
        [
            ex("PLUM and apple", 1.0, metadata={"keywords": ["apple", "plum"]}),
            ex("none here", 0.0, metadata={"keywords": ["x1", "y2", "z3"]}),
            ex("a b", 0.25, metadata={"keywords": ["a", "c", "d", "e"]}),
        ],
        "def evaluate(model_output: str, metadata: dict) -> float:\n"
        '    keywords = metadata.get("keywords") or []\n'
        "    if not keywords:\n        return 1.0\n"
        "    text = model_output.lower()\n"
        "    return sum(1 for k in keywords if str(k).lower() in text) / len(keywords)\n",
    ),
    Case(
        "answer_is_an_option",
        "scenario_input is a JSON object with 'question' and 'options' (a list of strings); the "
        "output, stripped, is exactly one of the options.",
        "bool",
        [
            ex("B", True, scenario_input={"question": "?", "options": ["A", "B"]}),
            ex("C", False, scenario_input={"question": "?", "options": ["A", "B"]}),
        ],
        [
            ex(" yes\n", True, scenario_input={"question": "?", "options": ["yes", "no"]}),
            ex("Yes", False, scenario_input={"question": "?", "options": ["yes", "no"]}),
            ex("maybe", False, scenario_input={"question": "?", "options": []}),
        ],
        "def evaluate(model_output: str, scenario_input) -> bool:\n"
        "    if not isinstance(scenario_input, dict):\n        return False\n"
        "    options = scenario_input.get('options', [])\n"
        "    return model_output.strip() in options\n",
        requires_scenario_input=True,
    ),
    Case(
        "sentence_count",
        "Count the sentences: maximal runs of text ending in one or more of '.', '!' or '?'; "
        "trailing text without such an ending is not counted.",
        "int",
        [ex("One. Two! Three?", 3), ex("no end", 0)],
        [ex("Wait... what?!", 2), ex("A. b", 1), ex("", 0)],
        "import re\n\n"
        "def evaluate(model_output: str) -> int:\n"
        '    return len(re.findall(r"[^.!?]+[.!?]+", model_output))\n',
    ),
    Case(
        "uppercase_fraction",
        "The fraction of the output's letters that are uppercase; 0.0 when it has no letters.",
        "float",
        [ex("AbCd", 0.5), ex("123", 0.0)],
        [ex("ABC def!", 0.5), ex("X", 1.0), ex("a1B2c3D4", 0.5)],
        "def evaluate(model_output: str) -> float:\n"
        "    letters = [c for c in model_output if c.isalpha()]\n"
        "    if not letters:\n        return 0.0\n"
        "    return sum(1 for c in letters if c.isupper()) / len(letters)\n",
    ),
    Case(
        "is_yes_or_no",
        "The output is just 'yes' or 'no': ignoring case, surrounding whitespace and one "
        "trailing period.",
        "bool",
        [ex("Yes.", True), ex("Yes, definitely", False)],
        [ex("  NO ", True), ex("no..", False), ex("nope", False), ex("yes", True)],
        "def evaluate(model_output: str) -> bool:\n"
        "    text = model_output.strip().lower()\n"
        '    if text.endswith("."):\n        text = text[:-1]\n'
        '    return text in ("yes", "no")\n',
    ),
    Case(
        "mentions_all_entities",
        "scenario_result is a list of names; every one appears in the output, ignoring case.",
        "bool",
        [
            ex("Ann met Bob", True, scenario_result=["Ann", "Bob"]),
            ex("Ann alone", False, scenario_result=["Ann", "Bob"]),
        ],
        [
            ex("BOB and ann", True, scenario_result=["Ann", "Bob"]),
            ex("anything", True, scenario_result=[]),
            ex("Carl", False, scenario_result=["Carl", "Dee"]),
        ],
        "def evaluate(model_output: str, scenario_result) -> bool:\n"
        "    text = model_output.lower()\n"
        "    return all(str(name).lower() in text for name in scenario_result or [])\n",
        requires_scenario_result=True,
    ),
    Case(
        "sequence_similarity",
        "Similarity of the output to scenario_result: difflib.SequenceMatcher(None, output, "
        "expected).ratio() on the raw strings.",
        "float",
        [ex("abcd", 0.75, scenario_result="abce"), ex("same", 1.0, scenario_result="same")],
        [
            ex("kitten", 0.6153846153846154, scenario_result="sitting"),
            ex("", 0.0, scenario_result="x"),
            ex("ab", 0.0, scenario_result="cd"),
        ],
        "import difflib\n\n"
        "def evaluate(model_output: str, scenario_result: str) -> float:\n"
        "    return difflib.SequenceMatcher(None, model_output, str(scenario_result)).ratio()\n",
        requires_scenario_result=True,
    ),
    Case(
        "lines_under_80",
        "Every line of the output is at most 80 characters long.",
        "bool",
        [ex("short\nlines", True), ex("x" * 81, False)],
        [ex("x" * 80, True), ex("ok\n" + "y" * 100 + "\nok", False), ex("", True)],
        "def evaluate(model_output: str) -> bool:\n"
        "    return all(len(line) <= 80 for line in model_output.splitlines())\n",
    ),
    Case(
        "has_code_block",
        "The output contains a Markdown fenced code block: an opening ``` and a later closing ```.",
        "bool",
        [ex("```python\nx = 1\n```", True), ex("plain text", False)],
        [ex("text ```a``` more", True), ex("only ``` one fence", False), ex("``` ```", True)],
        "def evaluate(model_output: str) -> bool:\n    return model_output.count('```') >= 2\n",
    ),
    Case(
        "python_parses",
        "The output is syntactically valid Python source (it parses).",
        "bool",
        [ex("x = 1\nprint(x)", True), ex("def f(:\n  pass", False)],
        [ex("", True), ex("for i in range(3): pass", True), ex("return = 5", False)],
        "import ast\n\n"
        "def evaluate(model_output: str) -> bool:\n"
        "    try:\n        ast.parse(model_output)\n    except SyntaxError:\n        return False\n"
        "    return True\n",
    ),
    Case(
        "repeated_words",
        "Count the places where a word is immediately repeated ('the the'), comparing "
        "whitespace-separated words case-insensitively.",
        "int",
        [ex("the the cat", 1), ex("no repeats here", 0)],
        [ex("a a a", 2), ex("The the end End", 2), ex("", 0)],
        "def evaluate(model_output: str) -> int:\n"
        "    words = [w.lower() for w in model_output.split()]\n"
        "    return sum(1 for a, b in zip(words, words[1:]) if a == b)\n",
    ),
    Case(
        "digits_only",
        "The output, stripped of surrounding whitespace, is a non-empty string of ASCII digits.",
        "bool",
        [ex(" 12345 ", True), ex("12a", False)],
        [ex("", False), ex("007", True), ex("1 2", False), ex("-5", False)],
        "def evaluate(model_output: str) -> bool:\n"
        "    text = model_output.strip()\n"
        '    return bool(text) and all(c in "0123456789" for c in text)\n',
    ),
    Case(
        "valid_iso_date",
        "The output contains a date written YYYY-MM-DD that is a real calendar date.",
        "bool",
        [ex("Due 2024-02-29.", True), ex("Due 2023-02-29.", False)],
        [ex("on 1999-12-31", True), ex("2024-13-01", False), ex("no date", False)],
        "import datetime\nimport re\n\n"
        "def evaluate(model_output: str) -> bool:\n"
        '    for y, m, d in re.findall(r"(\\d{4})-(\\d{2})-(\\d{2})", model_output):\n'
        "        try:\n            datetime.date(int(y), int(m), int(d))\n"
        "        except ValueError:\n            continue\n"
        "        return True\n"
        "    return False\n",
    ),
    Case(
        "does_not_echo_question",
        "The output does not contain the question (scenario_input) verbatim, ignoring case and "
        "surrounding whitespace of the question.",
        "bool",
        [
            ex("It is 4.", True, scenario_input="What is 2+2?"),
            ex("What is 2+2? It is 4.", False, scenario_input="What is 2+2?"),
        ],
        [
            ex("WHAT IS 2+2? 4", False, scenario_input=" what is 2+2? "),
            ex("Four", True, scenario_input="What is 2+2?"),
            ex("what is", True, scenario_input="What is 2+2?"),
        ],
        "def evaluate(model_output: str, scenario_input: str) -> bool:\n"
        "    return str(scenario_input).strip().lower() not in model_output.lower()\n",
        requires_scenario_input=True,
    ),
    Case(
        "rating_out_of_five",
        "The output contains a rating written 'N/5' (N a single digit 0-5); return N, or 0 when "
        "there is none.",
        "int",
        [ex("Rating: 4/5", 4), ex("no rating", 0)],
        [ex("I'd say 5/5!", 5), ex("3/5 then 2/5", 3), ex("7/5", 0)],
        "import re\n\n"
        "def evaluate(model_output: str) -> int:\n"
        '    match = re.search(r"(?<!\\d)([0-5])/5", model_output)\n'
        "    return int(match.group(1)) if match else 0\n",
    ),
    Case(
        "greets",
        "The output starts with a greeting: 'hello' or 'hi' as the first word, ignoring case "
        "and punctuation right after it.",
        "bool",
        [ex("Hello, Ann!", True), ex("Good day", False)],
        [ex("hi there", True), ex("history lesson", False), ex("HI!", True), ex("", False)],
        "import re\n\n"
        "def evaluate(model_output: str) -> bool:\n"
        '    return re.match(r"\\s*(hello|hi)\\b", model_output, re.IGNORECASE) is not None\n',
    ),
    Case(
        "json_list_length",
        "If the output is a JSON array, return its length; otherwise (invalid JSON or another "
        "JSON type) return -1.",
        "int",
        [ex("[1, 2, 3]", 3), ex('{"a": 1}', -1)],
        [ex("[]", 0), ex("not json", -1), ex('[["x"], {"y": 2}]', 2)],
        "import json\n\n"
        "def evaluate(model_output: str) -> int:\n"
        "    try:\n        data = json.loads(model_output)\n"
        "    except ValueError:\n        return -1\n"
        "    return len(data) if isinstance(data, list) else -1\n",
    ),
    Case(
        "token_f1",
        "Token-level F1 between the output and scenario_result: lowercase, split on whitespace, "
        "count overlapping tokens with multiplicity; 0.0 when either side has no tokens or "
        "nothing overlaps.",
        "float",
        [
            ex("the cat sat", 0.8, scenario_result="the cat"),
            ex("dog", 0.0, scenario_result="cat"),
        ],
        [
            ex("The Cat", 1.0, scenario_result="the cat"),
            ex("a a b", 0.4, scenario_result="a c"),
            ex("", 0.0, scenario_result="x"),
        ],
        "from collections import Counter\n\n"
        "def evaluate(model_output: str, scenario_result: str) -> float:\n"
        "    pred = model_output.lower().split()\n"
        "    gold = str(scenario_result).lower().split()\n"
        "    common = sum((Counter(pred) & Counter(gold)).values())\n"
        "    if not pred or not gold or common == 0:\n        return 0.0\n"
        "    precision = common / len(pred)\n"
        "    recall = common / len(gold)\n"
        "    return 2 * precision * recall / (precision + recall)\n",
        requires_scenario_result=True,
    ),
    Case(
        "model_input_echoed_length",
        "The number of characters of model_input (0 when it is missing).",
        "int",
        [ex("x", 5, model_input="hello"), ex("x", 0)],
        [ex("y", 0, model_input=""), ex("z", 3, model_input="abc"), ex("w", 1, model_input=" ")],
        "def evaluate(model_output: str, model_input: str | None) -> int:\n"
        "    return len(model_input or '')\n",
    ),
]
