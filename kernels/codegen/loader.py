"""A strict YAML reader that keeps the line of every key and value.

The YAML is untrusted text: aliases (``*name``) are refused, since a few
nested ones expand to billions of nodes; nesting deeper than
:data:`MAX_DEPTH` and files that are not UTF-8 are file:line errors too.
"""
import ast
from dataclasses import dataclass

import yaml


#: Op entries nest four levels deep; anything far deeper is a mistake or an attack.
MAX_DEPTH = 64


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


def _convert(node, file, seen, depth=0):
    line = node.start_mark.line + 1
    if id(node) in seen:
        raise CodegenError(f"{file}:{line}: YAML aliases (*name) are not supported; write "
                           "the value out")
    seen.add(id(node))
    if depth > MAX_DEPTH:
        raise CodegenError(f"{file}:{line}: YAML nested more than {MAX_DEPTH} levels deep")
    if isinstance(node, yaml.MappingNode):
        out = {}
        for k, v in node.value:
            key = _convert(k, file, seen, depth + 1)
            if not isinstance(key.value, str):
                raise key.error(f"key {key.value!r} is not a string")
            if key.value in out:
                raise key.error(f"duplicate key '{key.value}'")
            value = _convert(v, file, seen, depth + 1)
            out[key.value] = Located(value.value, file, key.line)
        return Located(out, file, line)
    if isinstance(node, yaml.SequenceNode):
        return Located([_convert(v, file, seen, depth + 1) for v in node.value], file, line)
    plain_null = node.style is None and node.value in ("", "~", "null")
    return Located(None if plain_null else node.value, file, line)


def read_entries(path, label):
    """Parse ``path`` (a YAML list of mappings) into Located entries."""
    with open(path, "rb") as fh:
        raw = fh.read()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[:exc.start].count(b"\n") + 1
        raise CodegenError(f"{label}:{line}: the file is not UTF-8 (byte "
                           f"{raw[exc.start]:#04x} at offset {exc.start})") from None
    try:
        root = yaml.compose(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark else 1
        raise CodegenError(f"{label}:{line}: invalid YAML: {exc}") from None
    except RecursionError:
        raise CodegenError(f"{label}:1: YAML nested too deeply to parse (more than "
                           f"{MAX_DEPTH} levels are never needed)") from None
    if root is None:
        return []
    doc = _convert(root, label, set())
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
