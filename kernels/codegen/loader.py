"""A strict YAML reader that keeps the line of every key and value."""
import ast
from dataclasses import dataclass

import yaml


class CodegenError(ValueError):
    """A mistake in an op YAML file; the message names the file and line."""


@dataclass(frozen=True)
class Located:
    """A YAML value with the file and line it came from."""

    value: object
    file: str
    line: int

    def error(self, message):
        return CodegenError(f"{self.file}:{self.line}: {message}")


def _convert(node, file):
    line = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        out = {}
        for k, v in node.value:
            key = _convert(k, file)
            if not isinstance(key.value, str):
                raise key.error(f"key {key.value!r} is not a string")
            if key.value in out:
                raise key.error(f"duplicate key '{key.value}'")
            value = _convert(v, file)
            out[key.value] = Located(value.value, file, key.line)
        return Located(out, file, line)
    if isinstance(node, yaml.SequenceNode):
        return Located([_convert(v, file) for v in node.value], file, line)
    plain_null = node.style is None and node.value in ("", "~", "null")
    return Located(None if plain_null else node.value, file, line)


def read_entries(path, label):
    """Parse ``path`` (a YAML list of mappings) into Located entries."""
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    try:
        root = yaml.compose(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark else 1
        raise CodegenError(f"{label}:{line}: invalid YAML: {exc}") from None
    if root is None:
        return []
    doc = _convert(root, label)
    if not isinstance(doc.value, list):
        raise doc.error("the file must be a YAML list of op entries")
    for item in doc.value:
        if not isinstance(item.value, dict):
            raise item.error("each entry must be a mapping")
    return doc.value


def parse_invoke(op):
    """The invoke text as a Python expression AST, or a CodegenError."""
    try:
        return ast.parse(op.invoke, mode="eval").body
    except SyntaxError as exc:
        raise CodegenError(f"{op.where}: {op.name}: invoke '{op.invoke}' is not a call "
                           f"expression: {exc.msg}") from None
