"""Okareo-style class check: does the answer mention the expected result?"""

from okareo.checks import CodeBasedCheck


class Check(CodeBasedCheck):
    @staticmethod
    def evaluate(model_output: str, scenario_result: str) -> bool:
        expected = [part.strip().lower() for part in scenario_result.split(";") if part.strip()]
        answer = model_output.lower()
        return all(part in answer for part in expected)
