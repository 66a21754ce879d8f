"""The op generator: YAML -> typed records -> committed Python modules."""
from .loader import CodegenError
from .yamldir import load_yaml_dir
from .emit import generate

__all__ = ["CodegenError", "load_yaml_dir", "generate"]
