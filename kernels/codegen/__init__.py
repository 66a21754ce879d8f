"""The op generator: YAML -> typed records -> committed Python modules."""
from .model import CodegenError, load_yaml_dir
from .emit import generate

__all__ = ["CodegenError", "load_yaml_dir", "generate"]
