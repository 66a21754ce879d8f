"""Read a folder of op YAML files into checked op definitions."""
import os

from .checks import check_all
from .family import expand_family
from .loader import CodegenError, read_entries
from .model import FILES, parse_entry


def load_yaml_dir(directory, label_dir=None):
    """Parse every known YAML file in ``directory`` and cross-check the result.

    ``label_dir`` is the folder name that error messages and generated
    headers show for the files (default: ``directory`` as given).  Raises
    CodegenError when ``directory`` is not a folder or holds none of the
    four op files.
    """
    if not os.path.isdir(directory):
        raise CodegenError(f"--yaml {directory!r} is not a directory")
    defs, found = [], False
    for fname, namespace, is_backward in FILES:
        path = os.path.join(directory, fname)
        if not os.path.exists(path):
            continue
        found = True
        label = f"{label_dir}/{fname}" if label_dir else path
        for e in read_entries(path, label):
            if not is_backward and "family" in e.value:
                defs.extend(expand_family(e, namespace))
            else:
                defs.append(parse_entry(e, namespace, is_backward))
    if not found:
        raise CodegenError(f"--yaml {directory!r} holds none of "
                           f"{', '.join(f for f, _, _ in FILES)}")
    check_all(defs)
    return defs
