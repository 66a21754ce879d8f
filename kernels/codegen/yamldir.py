"""Read a folder of op YAML files into checked op definitions."""
import os

from .checks import check_all
from .family import expand_family
from .loader import read_entries
from .model import FILES, parse_entry


def load_yaml_dir(directory, label_root=None):
    """Parse every known YAML file in ``directory`` and cross-check the result."""
    defs = []
    for fname, namespace, is_backward in FILES:
        path = os.path.join(directory, fname)
        if not os.path.exists(path):
            continue
        label = os.path.relpath(path, label_root) if label_root else path
        for e in read_entries(path, label):
            if not is_backward and "family" in e.value:
                defs.extend(expand_family(e, namespace))
            else:
                defs.append(parse_entry(e, namespace, is_backward))
    check_all(defs)
    return defs
